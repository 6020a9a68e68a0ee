package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// errBench is wrapped by everything wrong with a run's outputs: a file
// missing or older than the run, a table, row or column not there, a cell
// that is not the number it should be.
var errBench = errors.New("bench outputs")

// A table is one Markdown table of a bench output, with the line before it
// (its caption), as the bench tests write them: a header row, a delimiter
// row, then one row a line.
type table struct {
	caption string
	header  []string
	rows    [][]string
}

// parseTables reads every table in text, in order.
func parseTables(text string) []table {
	var out []table
	lines := strings.Split(text, "\n")
	caption := ""
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if isRow(l) && i+1 < len(lines) && isDelimiter(strings.TrimSpace(lines[i+1])) {
			t := table{caption: caption, header: cells(l)}
			for i += 2; i < len(lines) && isRow(strings.TrimSpace(lines[i])); i++ {
				t.rows = append(t.rows, cells(strings.TrimSpace(lines[i])))
			}
			out, caption = append(out, t), ""
			continue
		}
		if l != "" {
			caption = l
		}
	}
	return out
}

func isRow(l string) bool { return strings.HasPrefix(l, "|") }

var delimiter = regexp.MustCompile(`^\|(\s*:?-+:?\s*\|)+$`)

func isDelimiter(l string) bool { return delimiter.MatchString(l) }

// cells splits a row; the bench outputs never put a "|" inside a cell.
func cells(row string) []string {
	row = strings.TrimSuffix(strings.TrimPrefix(row, "|"), "|")
	out := strings.Split(row, "|")
	for i := range out {
		out[i] = strings.TrimSpace(out[i])
	}
	return out
}

// A ref names a kind of table in a run's outputs: the file it is in, its
// key columns (the first columns of its header, whose cells name a row)
// and, where the keys alone do not tell it from another table of the file,
// a column no other has.
type ref struct {
	file string
	keys []string
	mark string
}

// A source reads one run's outputs, in dir, and keeps the first thing wrong
// with them (err), so that a reader can ask for every figure and check once.
// A file older than started is refused: it is another run's.
type source struct {
	dir     string
	started time.Time
	files   map[string]string
	err     error
}

func newSource(dir string, started time.Time) *source {
	return &source{dir: dir, started: started, files: map[string]string{}}
}

func (s *source) fail(format string, args ...any) {
	if s.err == nil {
		s.err = fmt.Errorf("%w: "+format, append([]any{errBench}, args...)...)
	}
}

// text is the whole of a file of the run, read once.
func (s *source) text(file string) string {
	if t, ok := s.files[file]; ok {
		return t
	}
	path := filepath.Join(s.dir, file)
	info, err := os.Stat(path)
	if err == nil && info.ModTime().Before(s.started) {
		err = fmt.Errorf("written %s, before this run began (%s): another run's", info.ModTime().UTC().Format(time.DateTime), s.started.UTC().Format(time.DateTime))
	}
	var b []byte
	if err == nil {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		s.fail("%s: %v", path, err)
	}
	s.files[file] = string(b)
	return string(b)
}

// table is find's table, or a failure naming what was looked for.
func (s *source) table(r ref, col string) (table, bool) {
	t, n := s.find(r, col)
	if n != 1 {
		s.fail("%s: %d tables with the columns %q, %q and %q, want one", r.file, n, r.keys, r.mark, col)
	}
	return t, n == 1
}

// has says whether r's file has r's table with the column col.
func (s *source) has(r ref, col string) bool {
	_, n := s.find(r, col)
	return n == 1
}

// find is r's table with the column col, the one of r's file whose header
// begins with r's keys and has r's mark and col, and how many tables have
// them: any other count than one is a table missing, or a ref that does
// not tell two apart.
func (s *source) find(r ref, col string) (table, int) {
	var found table
	n := 0
	for _, t := range parseTables(s.text(r.file)) {
		if len(t.header) >= len(r.keys) && slices.Equal(t.header[:len(r.keys)], r.keys) &&
			(r.mark == "" || column(t, r.mark) >= 0) && column(t, col) >= 0 {
			found, n = t, n+1
		}
	}
	return found, n
}

// cell is the cell in column col of the one row of r whose key cells are
// key.
func (s *source) cell(r ref, col string, key ...string) string {
	t, ok := s.table(r, col)
	if !ok {
		return ""
	}
	found := -1
	for i, row := range t.rows {
		if len(row) == len(t.header) && len(key) <= len(row) && slices.Equal(row[:len(key)], key) {
			if found >= 0 {
				s.fail("%s: two rows %q", r.file, key)
				return ""
			}
			found = i
		}
	}
	if found < 0 {
		s.fail("%s: no row %q in the table of %q", r.file, key, col)
		return ""
	}
	return t.rows[found][column(t, col)]
}

var leading = regexp.MustCompile(`^[+-]?[0-9]+(\.[0-9]+)?`)

// figure is the number a cell begins with, as the test wrote it ("1.03"
// of "1.03 (0.93–1.15)"), and the number.
func (s *source) figure(r ref, col string, key ...string) (string, float64) {
	c := s.cell(r, col, key...)
	m := leading.FindString(c)
	v, err := strconv.ParseFloat(m, 64)
	if err != nil && s.err == nil {
		s.fail("%s: %q, column %q: %q is not a number", r.file, key, col, c)
	}
	return m, v
}

// fig is figure's text alone; num its number alone.
func (s *source) fig(r ref, col string, key ...string) string {
	t, _ := s.figure(r, col, key...)
	return t
}

func (s *source) num(r ref, col string, key ...string) float64 {
	_, v := s.figure(r, col, key...)
	return v
}

// match is the first submatch of re in the caption of r's table with the
// column col.
func (s *source) match(r ref, col string, re *regexp.Regexp) string {
	t, ok := s.table(r, col)
	if !ok {
		return ""
	}
	m := re.FindStringSubmatch(t.caption)
	if m == nil {
		s.fail("%s: the caption of the table of %q does not say %s", r.file, col, re)
		return ""
	}
	return m[1]
}

// keys are the key cells of r's table with the column col, row by row.
func (s *source) keys(r ref, col string) [][]string {
	t, _ := s.table(r, col)
	var out [][]string
	for _, row := range t.rows {
		if len(row) >= len(r.keys) {
			out = append(out, row[:len(r.keys)])
		}
	}
	return out
}

var engine = regexp.MustCompile(`DynamoDB Local [0-9][0-9.]*[0-9]`)

// engine is the engine every file read so far names; they must agree.
func (s *source) engine() string {
	seen := ""
	for file, text := range s.files {
		for _, e := range engine.FindAllString(text, -1) {
			if seen != "" && e != seen {
				s.fail("%s names %s, another file %s: not one run", file, e, seen)
			}
			seen = e
		}
	}
	if seen == "" {
		s.fail("no output names the engine (DynamoDB Local x.y.z)")
	}
	return seen
}

func column(t table, name string) int {
	for i, h := range t.header {
		if h == name {
			return i
		}
	}
	return -1
}
