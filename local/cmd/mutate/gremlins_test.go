package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestTheProtocolTargetIsTheProtocolFiles holds the pkg/idem targets to a
// partition of its files: each of the directory's own files is mutated by
// exactly one of idem-protocol and idem-core, the protocol files by
// idem-protocol, so that the mutants that must be killed or argued are the
// protocol target's; the packages below by idem-packages alone.
func TestTheProtocolTargetIsTheProtocolFiles(t *testing.T) {
	t.Chdir("../../..") // the module's root, where make runs the command
	entries, err := os.ReadDir("pkg/idem")
	if err != nil {
		t.Fatal(err)
	}
	protocol, rest, below := excluding(t, "idem-protocol"), excluding(t, "idem-core"), excluding(t, "idem-packages")
	n := 0
	for _, e := range entries {
		f := e.Name()
		if !strings.HasSuffix(f, ".go") || strings.HasSuffix(f, "_test.go") {
			continue
		}
		n++
		inProtocol, inRest := !protocol(f), !rest(f)
		switch {
		case inProtocol == inRest || !below(f):
			t.Errorf("%s: mutated by idem-protocol %v, by idem-core %v, by idem-packages %v; want exactly one of the first two", f, inProtocol, inRest, !below(f))
		case inProtocol != slices.Contains(protocolFiles, f):
			t.Errorf("%s: in idem-protocol %v, in protocolFiles %v", f, inProtocol, !inProtocol)
		}
	}
	if n < len(protocolFiles)+1 {
		t.Fatalf("read %d files of pkg/idem: the test ran where no pkg/idem is", n)
	}
	for _, f := range []string{"internal/door/door.go", "idemlambda/sqs.go", "internal/canonjson/canonjson.go"} {
		if !protocol(f) || !rest(f) || below(f) {
			t.Errorf("%s: want it in idem-packages alone", f)
		}
	}
	for _, f := range []string{"model/model.go", "internal/testbed/testbed.go"} {
		if !below(f) {
			t.Errorf("%s, the tests' own code: want it in no target", f)
		}
	}
}

// excluding says whether target name's --exclude-files leave a file out.
func excluding(t *testing.T, name string) func(string) bool {
	t.Helper()
	ts := selectTargets([]string{name})
	if len(ts) != 1 {
		t.Fatalf("no target %s", name)
	}
	return func(f string) bool {
		for _, e := range ts[0].exclude {
			if regexp.MustCompile(e).MatchString(f) {
				return true
			}
		}
		return false
	}
}
