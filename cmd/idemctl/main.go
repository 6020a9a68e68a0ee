// Command idemctl is the operator's tool for an idempotency table: show a
// key's record, lapse the lease of a holder known to be dead, delete a
// completed key, and check a deployed table.
//
//	idemctl show   -table T -scope S -key K [-body]
//	idemctl lapse  -table T -scope S -key K -reason "why"
//	idemctl delete -table T -scope S -key K -completed -reason "why"
//	idemctl check  -table T
//	idemctl help [command]    (or -h, after a command too)
//
// It uses the ordinary AWS configuration (profile, Region, credentials),
// and says so when it finds no credentials; DYNAMODB_ENDPOINT, or
// -endpoint, points it at a local engine. Every change is logged as a JSON
// line on stderr with the operator and reason. Help exits 0, a wrong
// command line 2, a failure 1.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/idemkeys/idem/pkg/idem"
)

// client is what idemctl calls: the Store's record calls and the table
// descriptions of check, in an interface of its own.
type client interface {
	idem.DynamoDBAPI
	tableAPI
}

func main() {
	os.Exit(run(context.Background(), os.Args[1:], connect, os.Stdout, os.Stderr))
}

// opts are the flags of the subcommands; each takes the ones it names.
type opts struct {
	table, scope, key, reason, endpoint, operator string
	body, completed                               bool
}

// command is one subcommand: its name, its synopsis, its line in the
// usage, and the flags it takes.
type command struct {
	name, synopsis, summary string
	flags                   []string
}

var commands = []command{
	{"show", "-table T -scope S -key K [-body]",
		"print a key's record: status, attempts, lease left, the stored response (its body with -body)",
		[]string{"table", "scope", "key", "body", "endpoint"}},
	{"lapse", "-table T -scope S -key K -reason R",
		"end the lease of a holder known to be dead: the next retry of its request takes the key over",
		[]string{"table", "scope", "key", "reason", "operator", "endpoint"}},
	{"delete", "-table T -scope S -key K -completed -reason R",
		"delete a completed key: the next request under it runs the work again",
		[]string{"table", "scope", "key", "completed", "reason", "operator", "endpoint"}},
	{"check", "-table T",
		"check a deployed table: key schema, TTL, on-demand billing, point-in-time recovery, one Region",
		[]string{"table", "endpoint"}},
}

func lookup(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

// usage is idemctl's help: every subcommand with its line.
func usage() string {
	var b strings.Builder
	b.WriteString("idemctl is the operator's tool for an idempotency table.\n\nusage: idemctl <command> [flags]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-7s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(&b, "  %-7s %s\n", "help", "print this help, or a command's: idemctl help <command>")
	b.WriteString("\nRun \"idemctl <command> -h\" for a command's flags. The AWS configuration is the\n" +
		"ordinary one (AWS_PROFILE, AWS_REGION, credentials); DYNAMODB_ENDPOINT or\n" +
		"-endpoint points idemctl at a local engine.\n")
	return b.String()
}

// flagSet is c's flags, bound to o. It prints nothing: run says what is
// wrong and prints the help where it belongs.
func (c *command) flagSet(o *opts) *flag.FlagSet {
	fs := flag.NewFlagSet("idemctl "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	for _, name := range c.flags {
		switch name {
		case "table":
			fs.StringVar(&o.table, name, os.Getenv("IDEMPOTENCY_TABLE"), "the idempotency table (default $IDEMPOTENCY_TABLE)")
		case "scope":
			fs.StringVar(&o.scope, name, "", "the key's scope: the caller it belongs to")
		case "key":
			fs.StringVar(&o.key, name, "", "the Idempotency-Key")
		case "reason":
			fs.StringVar(&o.reason, name, "", "why: logged with the change")
		case "endpoint":
			fs.StringVar(&o.endpoint, name, os.Getenv("DYNAMODB_ENDPOINT"), "a local DynamoDB engine (default $DYNAMODB_ENDPOINT)")
		case "operator":
			fs.StringVar(&o.operator, name, os.Getenv("USER"), "who runs this, for the log (default $USER; required: a change names who made it)")
		case "body":
			fs.BoolVar(&o.body, name, false, "print the stored response's body too")
		case "completed":
			fs.BoolVar(&o.completed, name, false, "required: says the key is done and may be used again (only a completed key is deleted)")
		}
	}
	return fs
}

// help prints c's synopsis, its line and its flags.
func (c *command) help(w io.Writer) {
	fs := c.flagSet(&opts{})
	fmt.Fprintf(w, "usage: idemctl %s %s\n\n%s\n\nflags:\n", c.name, c.synopsis, c.summary)
	fs.SetOutput(w)
	fs.PrintDefaults()
}

func run(ctx context.Context, args []string, dial func(context.Context, string) (client, error), stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		if args[0] != "help" || len(args) == 1 {
			fmt.Fprint(stdout, usage())
			return 0
		}
		if c := lookup(args[1]); c != nil {
			c.help(stdout)
			return 0
		}
		fmt.Fprintf(stderr, "idemctl: unknown command %q\n\n%s", args[1], usage())
		return 2
	}
	c := lookup(args[0])
	if c == nil {
		fmt.Fprintf(stderr, "idemctl: unknown command %q\n\n%s", args[0], usage())
		return 2
	}
	var o opts
	fs := c.flagSet(&o)
	switch err := fs.Parse(args[1:]); {
	case errors.Is(err, flag.ErrHelp):
		c.help(stdout)
		return 0
	case err != nil:
		return misuse(c, stderr, err.Error())
	case fs.NArg() > 0:
		return misuse(c, stderr, fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
	}
	if o.table == "" {
		return misuse(c, stderr, "-table is required")
	}
	// A change is audited by who made it: a log line naming no one audits
	// nothing, so a change with no operator is not made.
	if slices.Contains(c.flags, "operator") && strings.TrimSpace(o.operator) == "" {
		return misuse(c, stderr, "-operator is required when $USER is unset: the change is logged with who made it")
	}
	db, err := dial(ctx, o.endpoint)
	if err != nil {
		fmt.Fprintln(stderr, "idemctl:", err)
		return 1
	}
	if c.name == "check" {
		return check(ctx, db, o.table, stdout)
	}
	err = record(ctx, db, c.name, o, streams{stdout, stderr})
	if err != nil {
		fmt.Fprintln(stderr, "idemctl:", err)
		if errors.Is(err, errUsage) {
			fmt.Fprintln(stderr)
			c.help(stderr)
			return 2
		}
		return 1
	}
	return 0
}

// misuse says what is wrong with the command line, then c's help.
func misuse(c *command, stderr io.Writer, what string) int {
	fmt.Fprintf(stderr, "idemctl %s: %s\n\n", c.name, what)
	c.help(stderr)
	return 2
}

// errUsage marks an error in the command line: the exit code is 2.
var errUsage = errors.New("see idemctl <command> -h")

// streams are where a command writes: its output, and its log and errors.
type streams struct{ stdout, stderr io.Writer }

// record runs the subcommands on one key's record.
func record(ctx context.Context, db client, cmd string, o opts, w streams) error {
	if o.scope == "" || o.key == "" {
		return fmt.Errorf("-scope and -key are required: %w", errUsage)
	}
	stdout := w.stdout
	log := slog.New(slog.NewJSONHandler(w.stderr, nil)).With("operator", o.operator, "table", o.table)
	store, err := idem.New(db, o.table, func(opt *idem.Options) { opt.Logger = log })
	if err != nil {
		return err
	}
	rec, err := store.Inspect(ctx, o.scope, o.key)
	if err != nil {
		return err
	}
	switch cmd {
	case "show":
		show(stdout, rec, o.body, time.Now())
		return nil
	case "lapse":
		if err := store.Lapse(ctx, rec, o.reason); errors.Is(err, idem.ErrWrongState) {
			return fmt.Errorf("%w: it has its answer, which every retry gets, and a lapse undoes nothing; "+
				"to have its request run again, delete it: idemctl delete -table %s -scope %q -key %q -completed -reason \"why\"", err, o.table, o.scope, o.key)
		} else if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "lapsed %s (attempt %d): the next retry of its request takes it over\n", rec.KeyHash, rec.Attempts)
		return nil
	case "delete":
		if !o.completed {
			return fmt.Errorf("delete needs -completed, to say the key is done and may be used again: %w", errUsage)
		}
		if err := store.Delete(ctx, rec, o.reason); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "deleted %s: a retry of its request now runs the work again\n", rec.KeyHash)
		return nil
	}
	return fmt.Errorf("unknown command %q: %w", cmd, errUsage)
}

// show prints the record; the body only when asked.
func show(w io.Writer, r *idem.KeyRecord, body bool, now time.Time) {
	ts := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	fmt.Fprintf(w, "scope:      %s\nkey:        %s\nkey_hash:   %s\nstatus:     %s\nattempts:   %d\n", r.Scope, r.Key, r.KeyHash, r.Status, r.Attempts)
	fmt.Fprintf(w, "lease_left: %v\ncreated:    %s\ncompleted:  %s\nexpires:    %s\n", r.LeaseLeft(now).Round(time.Millisecond), ts(r.CreatedAt), ts(r.CompletedAt), ts(r.ExpiresAt))
	if r.Response == nil {
		return
	}
	fmt.Fprintf(w, "stored:     %d (%d bytes)\n", r.Response.StatusCode, len(r.Response.Body))
	if body {
		fmt.Fprintf(w, "body:\n%s\n", r.Response.Body)
	}
}
