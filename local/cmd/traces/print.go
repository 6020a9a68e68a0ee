package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// quiet are the attributes a tree leaves out: the span's name says them
// (the method, the route, the operation), or they are the same on every
// span of their kind (the system, the region, the protocol), or they name
// one request to a service (its request id, the invocation id).
var quiet = map[string]bool{
	"rpc.system.name": true, "rpc.method": true, "aws.region": true, "aws.request_id": true, "db.system.name": true,
	"server.address": true, "server.port": true, "network.protocol.version": true, "http.request.method": true,
	"http.route": true, "faas.trigger": true, "faas.invocation_id": true, "messaging.system": true,
	"messaging.operation.type": true, "messaging.operation.name": true, "messaging.destination.name": true,
	"idem.path": true,
}

// print writes t as a tree: each span on a line, its children and events
// (·) under it in the order they happened, a span whose parent never ended
// under a line that says so.
func (t *trace) print(w io.Writer) {
	service := ""
	if len(t.tops) > 0 {
		service = t.tops[0].service()
	}
	fmt.Fprintf(w, "trace %s  %s\n", t.id, service)
	missing := ""
	for _, top := range t.tops {
		depth := 0
		if p := top.Parent.SpanID; p != noSpan && p != "" {
			if p != missing {
				fmt.Fprintf(w, "(span %s: not recorded, it never ended)\n", p)
				missing = p
			}
			depth = 1
		}
		t.printSpan(w, top, depth)
	}
}

func (t *trace) printSpan(w io.Writer, s *span, depth int) {
	indent := strings.Repeat("  ", depth)
	fmt.Fprintf(w, "%s%s\n", indent, strings.Join(append([]string{s.Name}, append(fields(s), duration(s.EndTime.Sub(s.StartTime)))...), "  "))
	for _, l := range s.Links {
		fmt.Fprintf(w, "%s  ↪ linked to trace %s span %s\n", indent, l.SpanContext.TraceID, l.SpanContext.SpanID)
	}
	children := t.children(s)
	events := s.Events
	for len(children) > 0 || len(events) > 0 {
		if len(events) > 0 && (len(children) == 0 || events[0].Time.Before(children[0].StartTime)) {
			ev := events[0]
			parts := []string{"· " + ev.Name}
			for _, kv := range ev.Attributes {
				if kv.Key != "exception.stacktrace" {
					parts = append(parts, kv.Key+"="+kv.text())
				}
			}
			fmt.Fprintf(w, "%s  %s\n", indent, strings.Join(parts, " "))
			events = events[1:]
			continue
		}
		t.printSpan(w, children[0], depth+1)
		children = children[1:]
	}
}

// fields are what a span's line says beside its name: its outcome first
// where it has one, the table, the URL's path, the status, a cold start,
// the attributes that are not quiet, and an error's cause.
func fields(s *span) []string {
	var out, rest []string
	if o := s.attr("idem.outcome"); o != "" {
		out = append(out, "idem.outcome="+o)
	}
	if t := s.attr("aws.dynamodb.table_names"); t != "" {
		out = append(out, t)
	}
	if u := s.attr("url.full"); u != "" {
		out = append(out, urlPath(u))
	}
	if c := s.attr("http.response.status_code"); c != "" {
		out = append(out, c)
	}
	if s.attr("faas.coldstart") == "true" {
		out = append(out, "cold start")
	}
	for _, kv := range s.Attributes {
		switch kv.Key {
		case "idem.outcome", "aws.dynamodb.table_names", "url.full", "http.response.status_code", "faas.coldstart":
			continue
		case "idem.cache_hit":
			if kv.text() == "false" {
				continue
			}
		case "error.type":
			if s.Status.Description != "" {
				continue // the cause below says more
			}
		}
		if !quiet[kv.Key] {
			rest = append(rest, kv.Key+"="+kv.text())
		}
	}
	out = append(out, rest...)
	if s.Status.Code == "Error" {
		out = append(out, strings.TrimSpace("ERROR "+cause(s.Status.Description)))
	}
	return slices.DeleteFunc(out, func(f string) bool { return f == "" })
}

// urlPath is a URL's path and query, without its scheme and host (a local
// port that changes from run to run).
func urlPath(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		u = u[i+3:]
		if j := strings.IndexByte(u, '/'); j >= 0 {
			return u[j:]
		}
		return "/"
	}
	return u
}

// cause is the end of an error's text: an AWS SDK error's last part names
// the service's error and its message ("ConditionalCheckFailedException:
// The conditional request failed"), after the status and request id.
func cause(desc string) string {
	if i := strings.LastIndex(desc, ", "); i >= 0 && strings.Contains(desc, "RequestID: ") {
		desc = desc[i+2:]
	}
	desc = strings.TrimPrefix(desc, "api error ")
	if len(desc) > 100 {
		desc = desc[:100] + "…"
	}
	return desc
}

func duration(d time.Duration) string {
	return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
}
