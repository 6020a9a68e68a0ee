package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// span is one line of the traces file: a span as OpenTelemetry's stdout
// exporter writes it (sdk/trace/tracetest.SpanStub in JSON).
type span struct {
	Name        string
	SpanContext spanContext
	Parent      spanContext
	SpanKind    int
	StartTime   time.Time
	EndTime     time.Time
	Attributes  []keyValue
	Events      []struct {
		Name       string
		Attributes []keyValue
		Time       time.Time
	}
	Links []struct {
		SpanContext spanContext
	}
	Status struct {
		Code        string
		Description string
	}
	Resource []keyValue
}

type spanContext struct {
	TraceID, SpanID string
}

// noSpan is a span id that names none: a root's parent.
const noSpan = "0000000000000000"

type keyValue struct {
	Key   string
	Value struct {
		Type  string
		Value any
	}
}

// text is a value as one word: a list's elements joined by commas.
func (kv keyValue) text() string {
	switch v := kv.Value.Value.(type) {
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = fmt.Sprint(e)
		}
		return strings.Join(parts, ",")
	case nil:
		return ""
	default:
		return fmt.Sprint(v)
	}
}

func (s *span) attr(key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.text()
		}
	}
	return ""
}

func (s *span) service() string {
	for _, kv := range s.Resource {
		if kv.Key == "service.name" {
			return kv.text()
		}
	}
	return ""
}

// trace is the spans of one trace id, in the order they started, and the
// ones whose parent is not among them: the root, and any span whose parent
// never ended (a process killed under it).
type trace struct {
	id    string
	spans []*span
	tops  []*span
}

func (t *trace) start() time.Time { return t.spans[0].StartTime }

func (t *trace) children(p *span) []*span {
	var out []*span
	for _, s := range t.spans {
		if s.Parent.SpanID == p.SpanContext.SpanID && s != p {
			out = append(out, s)
		}
	}
	return out
}

// read parses a traces file into its traces, in the order each began. A
// line that is not a span (a partial last line, while a span is being
// written) is skipped and counted.
func read(r io.Reader) (traces []*trace, skipped int, err error) {
	byID := map[string]*trace{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var s span
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.UseNumber()
		if err := dec.Decode(&s); err != nil || s.SpanContext.TraceID == "" {
			skipped++
			continue
		}
		t := byID[s.SpanContext.TraceID]
		if t == nil {
			t = &trace{id: s.SpanContext.TraceID}
			byID[t.id] = t
			traces = append(traces, t)
		}
		t.spans = append(t.spans, &s)
	}
	if err := sc.Err(); err != nil {
		return nil, skipped, err
	}
	for _, t := range traces {
		slices.SortStableFunc(t.spans, func(a, b *span) int { return a.StartTime.Compare(b.StartTime) })
		ids := map[string]bool{}
		for _, s := range t.spans {
			ids[s.SpanContext.SpanID] = true
		}
		for _, s := range t.spans {
			if !ids[s.Parent.SpanID] {
				t.tops = append(t.tops, s)
			}
		}
	}
	slices.SortStableFunc(traces, func(a, b *trace) int { return a.start().Compare(b.start()) })
	return traces, skipped, nil
}
