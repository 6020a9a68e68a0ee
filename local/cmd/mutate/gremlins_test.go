package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestTheProtocolTargetIsTheProtocolFiles holds the two pkg/idem targets
// to a partition of the directory's own files: each file is mutated by
// exactly one of them, the protocol files by idem-protocol, so that the
// mutants that must be killed or argued are the protocol target's.
func TestTheProtocolTargetIsTheProtocolFiles(t *testing.T) {
	t.Chdir("../../..") // the module's root, where make runs the command
	entries, err := os.ReadDir("pkg/idem")
	if err != nil {
		t.Fatal(err)
	}
	protocol, rest := excluding(t, "idem-protocol"), excluding(t, "idem")
	n := 0
	for _, e := range entries {
		f := e.Name()
		if !strings.HasSuffix(f, ".go") || strings.HasSuffix(f, "_test.go") {
			continue
		}
		n++
		inProtocol, inRest := !protocol(f), !rest(f)
		switch {
		case inProtocol == inRest:
			t.Errorf("%s: mutated by idem-protocol %v, by idem %v; want exactly one", f, inProtocol, inRest)
		case inProtocol != slices.Contains(protocolFiles, f):
			t.Errorf("%s: in idem-protocol %v, in protocolFiles %v", f, inProtocol, !inProtocol)
		}
	}
	if n < len(protocolFiles)+1 {
		t.Fatalf("read %d files of pkg/idem: the test ran where no pkg/idem is", n)
	}
	if !protocol("internal/door/door.go") || rest("internal/door/door.go") {
		t.Error("the doors' files: want them in idem alone")
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
