// Command idemctl is the operator's tool for an idempotency table: show a
// key's record, lapse the lease of a holder known to be dead, delete a
// completed key, and check a deployed table.
//
//	idemctl show   -table T -scope S -key K [-body]
//	idemctl lapse  -table T -scope S -key K -reason "why"
//	idemctl delete -table T -scope S -key K -completed -reason "why"
//	idemctl check  -table T
//
// It uses the ordinary AWS configuration (profile, Region, credentials);
// DYNAMODB_ENDPOINT, or -endpoint, points it at a local engine. Every
// change is logged as a JSON line on stderr with the operator and reason.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

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

// connect builds the client from the AWS configuration, on endpoint if set.
func connect(ctx context.Context, endpoint string) (client, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load AWS config: %w", err)
	}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	}), nil
}

// opts are the flags every subcommand shares.
type opts struct {
	table, scope, key, reason, endpoint, operator string
	body, completed                               bool
}

const usage = "usage: idemctl show|lapse|delete|check -table T [-scope S -key K] [-body] [-reason R] [-completed]"

func run(ctx context.Context, args []string, dial func(context.Context, string) (client, error), stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	cmd := args[0]
	var o opts
	fs := flag.NewFlagSet("idemctl "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.table, "table", os.Getenv("IDEMPOTENCY_TABLE"), "the idempotency table (default $IDEMPOTENCY_TABLE)")
	fs.StringVar(&o.scope, "scope", "", "the key's scope: the caller it belongs to")
	fs.StringVar(&o.key, "key", "", "the Idempotency-Key")
	fs.StringVar(&o.reason, "reason", "", "why: logged with every change")
	fs.StringVar(&o.endpoint, "endpoint", os.Getenv("DYNAMODB_ENDPOINT"), "a local DynamoDB engine (default $DYNAMODB_ENDPOINT)")
	fs.StringVar(&o.operator, "operator", os.Getenv("USER"), "who runs this, for the log (default $USER)")
	fs.BoolVar(&o.body, "body", false, "show: print the stored response's body too")
	fs.BoolVar(&o.completed, "completed", false, "delete: required; only a completed key is deleted")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if o.table == "" {
		fmt.Fprintln(stderr, "idemctl: -table is required")
		return 2
	}
	db, err := dial(ctx, o.endpoint)
	if err != nil {
		fmt.Fprintln(stderr, "idemctl:", err)
		return 1
	}
	if cmd == "check" {
		return check(ctx, db, o.table, stdout)
	}
	err = record(ctx, cmd, db, o, stdout, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "idemctl:", err)
		if errors.Is(err, errUsage) {
			return 2
		}
		return 1
	}
	return 0
}

var errUsage = errors.New(usage)

// record runs the subcommands on one key's record.
func record(ctx context.Context, cmd string, db client, o opts, stdout, stderr io.Writer) error {
	if o.scope == "" || o.key == "" {
		return fmt.Errorf("-scope and -key are required: %w", errUsage)
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil)).With("operator", o.operator, "table", o.table)
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
		if err := store.Lapse(ctx, rec, o.reason); err != nil {
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
