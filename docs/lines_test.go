package docs_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// generatedBlocks are the blocks of a Markdown file that a program writes
// from a measurement, by their opening and closing markers: their lines are
// that program's to keep short, not the document's, and an edit by hand
// would be overwritten by the next run. BENCHMARKS.md's glance is written
// by make bench (tools/benchchart).
var generatedBlocks = map[string]string{
	"<!-- glance:": "<!-- /glance -->",
}

// Every document reads raw, in a terminal or a diff, as well as rendered:
// no line of any Markdown file of the repository, tables and code
// included, runs over 400 bytes. A wide table becomes a list or a
// narrower table; a long sentence, two.
func TestNoMarkdownLineIsOver400Bytes(t *testing.T) {
	root := projectRoot(t)
	files := markdownFiles(t, root)
	if len(files) == 0 {
		t.Fatal("no Markdown file found")
	}
	for _, file := range files {
		text, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		closing := "" // the closing marker of the generated block we are in
		for i, line := range strings.Split(string(text), "\n") {
			if closing != "" {
				if strings.HasPrefix(strings.TrimSpace(line), closing) {
					closing = ""
				}
				continue
			}
			if end, ok := openingOf(line); ok {
				closing = end
				continue
			}
			if len(line) > maxLineBytes {
				t.Errorf("%s:%d: %d bytes, over %d: split the sentence, or turn the table into a list", filepath.ToSlash(file), i+1, len(line), maxLineBytes)
			}
		}
		if closing != "" {
			t.Errorf("%s: a generated block is never closed by %q", filepath.ToSlash(file), closing)
		}
	}
}

// openingOf reports whether line opens a generated block, and its closing
// marker.
func openingOf(line string) (closing string, ok bool) {
	for open, end := range generatedBlocks {
		if strings.HasPrefix(strings.TrimSpace(line), open) {
			return end, true
		}
	}
	return "", false
}
