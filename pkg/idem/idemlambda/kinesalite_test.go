package idemlambda_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// kinesalite is a Kinesis Data Streams emulator (npm kinesalite@3.3.3, in
// memory), for a test of the Kinesis door on a real shard: sequence
// numbers the stream assigns, a producer's retry stored twice, a
// redelivery read from a checkpoint. The test installs it, pinned by
// testdata/kinesalite/package-lock.json, into the user's cache directory
// with npm, as idemtest installs DynamoDB Local, and runs it with node;
// without node or npm it is skipped, saying what to install.
type kinesalite struct {
	t        *testing.T
	endpoint string
}

const kinesaliteVersion = "3.3.3"

func startKinesalite(t *testing.T) *kinesalite {
	t.Helper()
	node, errNode := exec.LookPath("node")
	_, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		t.Skip("the Kinesis door's test on a real shard needs node and npm, to run kinesalite (Debian/Ubuntu: apt-get install nodejs npm); its tests on built records ran")
	}
	cli := filepath.Join(installKinesalite(t), "node_modules", "kinesalite", "cli.js")
	port := freePort(t)
	cmd := exec.Command(node, cli, "--port", strconv.Itoa(port), "--createStreamMs", "0", "--deleteStreamMs", "0", "--updateStreamMs", "0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start kinesalite: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	listening := make(chan bool, 1)
	go func() {
		r := bufio.NewReader(out)
		line, _ := r.ReadString('\n')
		listening <- strings.HasPrefix(line, "Listening at")
		_, _ = io.Copy(io.Discard, r) // until it is killed
	}()
	select {
	case ok := <-listening:
		if !ok {
			t.Fatal("kinesalite did not start listening")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("kinesalite did not start in 30s")
	}
	return &kinesalite{t: t, endpoint: "http://127.0.0.1:" + strconv.Itoa(port)}
}

// installKinesalite returns the install directory, installing the pinned
// package there with npm ci on first use; a partial install is never taken
// for one (it is renamed into place whole).
func installKinesalite(t *testing.T) string {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatalf("no user cache directory to install kinesalite into: %v", err)
	}
	dest := filepath.Join(cache, "idemtest", "kinesalite-"+kinesaliteVersion)
	if _, err := os.Stat(filepath.Join(dest, "node_modules", "kinesalite", "cli.js")); err == nil {
		return dest
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dest), filepath.Base(dest)+".partial-")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", "kinesalite", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	npm := exec.CommandContext(ctx, "npm", "ci", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error")
	npm.Dir = tmp
	if out, err := npm.CombinedOutput(); err != nil {
		t.Fatalf("install kinesalite %s with npm ci: %v: %s", kinesaliteVersion, err, bytes.TrimSpace(out))
	}
	if err := os.Rename(tmp, dest); err != nil {
		if _, statErr := os.Stat(filepath.Join(dest, "node_modules")); statErr != nil {
			t.Fatal(err)
		} // else another test binary installed it first
	}
	return dest
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// call sends one Kinesis API action (JSON 1.1, signed as the SDK signs it)
// and decodes its answer into out.
func (k *kinesalite) call(action string, in, out any) {
	k.t.Helper()
	body, err := json.Marshal(in)
	if err != nil {
		k.t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, k.endpoint, bytes.NewReader(body))
	if err != nil {
		k.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.1")
	req.Header.Set("X-Amz-Target", "Kinesis_20131202."+action)
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: "local", SecretAccessKey: "local"}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]), "kinesis", "us-east-1", time.Now()); err != nil {
		k.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		k.t.Fatalf("kinesalite %s: %v", action, err)
	}
	defer func() { _ = resp.Body.Close() }()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK {
		k.t.Fatalf("kinesalite %s: %s: %s", action, resp.Status, buf.String())
	}
	if out != nil {
		if err := json.Unmarshal(buf.Bytes(), out); err != nil {
			k.t.Fatalf("kinesalite %s: %v: %s", action, err, buf.String())
		}
	}
}

// stream creates a stream of one shard and returns its ARN and the shard.
func (k *kinesalite) stream(name string) (arn, shard string) {
	k.t.Helper()
	k.call("CreateStream", map[string]any{"StreamName": name, "ShardCount": 1}, nil)
	var d struct {
		StreamDescription struct {
			StreamARN, StreamStatus string
			Shards                  []struct{ ShardId string }
		}
	}
	for deadline := time.Now().Add(10 * time.Second); d.StreamDescription.StreamStatus != "ACTIVE"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			k.t.Fatalf("stream %s not active after 10s", name)
		}
		k.call("DescribeStream", map[string]any{"StreamName": name}, &d)
	}
	return d.StreamDescription.StreamARN, d.StreamDescription.Shards[0].ShardId
}

// put sends a record as a producer does, and returns its sequence number.
func (k *kinesalite) put(stream, partitionKey string, data []byte) string {
	k.t.Helper()
	var out struct{ SequenceNumber string }
	k.call("PutRecord", map[string]any{"StreamName": stream, "PartitionKey": partitionKey, "Data": data}, &out)
	return out.SequenceNumber
}

// read reads the shard from its start, or from the record at seq (Lambda's
// checkpoint), as the event Lambda delivers.
func (k *kinesalite) read(stream, arn, shard, seq string) events.KinesisEvent {
	k.t.Helper()
	in := map[string]any{"StreamName": stream, "ShardId": shard, "ShardIteratorType": "TRIM_HORIZON"}
	if seq != "" {
		in["ShardIteratorType"], in["StartingSequenceNumber"] = "AT_SEQUENCE_NUMBER", seq
	}
	var it struct{ ShardIterator string }
	k.call("GetShardIterator", in, &it)
	var out struct {
		Records []struct {
			SequenceNumber, PartitionKey string
			Data                         []byte
			ApproximateArrivalTimestamp  float64
		}
	}
	k.call("GetRecords", map[string]any{"ShardIterator": it.ShardIterator}, &out)
	var ev events.KinesisEvent
	for _, r := range out.Records {
		ev.Records = append(ev.Records, events.KinesisEventRecord{
			AwsRegion: "us-east-1", EventID: shard + ":" + r.SequenceNumber, EventName: "aws:kinesis:record", EventSource: "aws:kinesis",
			EventSourceArn: arn, EventVersion: "1.0",
			Kinesis: events.KinesisRecord{Data: r.Data, PartitionKey: r.PartitionKey, SequenceNumber: r.SequenceNumber, KinesisSchemaVersion: "1.0",
				ApproximateArrivalTimestamp: events.SecondsEpochTime{Time: time.Unix(0, int64(r.ApproximateArrivalTimestamp*1e9))}},
		})
	}
	return ev
}

// On a real shard: a producer's retry is stored twice under two sequence
// numbers and takes effect once under its event id; a failure in the
// middle holds back its partition key; Lambda's redelivery, read from the
// checkpoint the answer names, applies the rest once, in order.
func TestKinesisDoorOnAShard(t *testing.T) {
	k := startKinesalite(t)
	arn, shard := k.stream("postings")
	put := func(n string) string {
		account, version, _ := strings.Cut(n, "@")
		data, _ := json.Marshal(posting{Event: "e-" + n, Account: account, Version: version})
		return k.put("postings", account, data)
	}
	first := put("a@1")
	if retry := put("a@1"); retry == first { // the producer's PutRecord lost its answer, and was sent again
		t.Fatalf("the retry got the first's sequence number %s", first)
	}
	for _, n := range []string{"a@2", "b@1", "a@3", "b@2"} {
		put(n)
	}
	p := newPostings(t)
	p.fail.n["a@2"] = 1
	handle := p.door(p.s.Store)
	batch := k.read("postings", arn, shard, "")
	if len(batch.Records) != 6 {
		t.Fatalf("the shard holds %d records, want 6", len(batch.Records))
	}
	resp, _ := handle(context.Background(), batch)
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != batch.Records[2].Kinesis.SequenceNumber {
		t.Fatalf("the answer %v, want a@2's sequence number %s", resp.BatchItemFailures, batch.Records[2].Kinesis.SequenceNumber)
	}
	p.want(map[string]string{"a": "[1]", "b": "[1 2]"})
	again := k.read("postings", arn, shard, resp.BatchItemFailures[0].ItemIdentifier)
	if resp, _ = handle(context.Background(), again); len(again.Records) != 4 || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("the redelivery of %d records from the checkpoint: %v, want 4 and no failure", len(again.Records), resp)
	}
	p.want(map[string]string{"a": "[1 2 3]", "b": "[1 2]"})
}
