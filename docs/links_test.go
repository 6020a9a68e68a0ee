package docs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// repoURL is this repository on GitHub: a link that starts with it is
// checked as a repository-relative one.
var repoURL = regexp.MustCompile(`^https://github\.com/idemkeys/idem/(?:blob|tree)/main/`)

var (
	fence      = regexp.MustCompile("^\\s*(```|~~~)")
	inlineCode = regexp.MustCompile("`[^`]*`")
	link       = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	refDef     = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)`)
	href       = regexp.MustCompile(`href="([^"]+)"`)
	heading    = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	mdLink     = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	htmlAnchor = regexp.MustCompile(`<a (?:id|name)="([^"]+)"`)
)

// markdownFiles are the repository's Markdown files, relative to root,
// outside what is built, installed or ignored.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch {
			case rel == "bin", rel == ".aws-sam", rel == filepath.Join("local", ".run"), d.Name() == "node_modules", d.Name() == "testdata", rel != "." && strings.HasPrefix(d.Name(), "."):
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".md") {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// prose is a Markdown file's lines outside fenced code, with inline code
// blanked, so that neither is read as a link or a heading.
func prose(text string) []string {
	var lines []string
	in := false
	for _, l := range strings.Split(text, "\n") {
		if fence.MatchString(l) {
			in = !in
			lines = append(lines, "")
			continue
		}
		if in {
			lines = append(lines, "")
			continue
		}
		lines = append(lines, inlineCode.ReplaceAllStringFunc(l, func(s string) string { return strings.Repeat(" ", len(s)) }))
	}
	return lines
}

// headings are a Markdown file's headings, level and text, in order.
func headings(text string) (levels []int, texts []string) {
	in := false
	for _, l := range strings.Split(text, "\n") {
		if fence.MatchString(l) {
			in = !in
		}
		if m := heading.FindStringSubmatch(l); !in && m != nil {
			levels, texts = append(levels, len(m[1])), append(texts, m[2])
		}
	}
	return levels, texts
}

// anchors are the fragments a Markdown file offers: those GitHub gives its
// headings (the text as rendered, lowercased, without punctuation but
// hyphens and underscores, spaces as hyphens, and a repeated one suffixed
// -1, -2, ...), and the ids of its HTML anchors (<a id="x"></a>, as
// RELIABILITY.md gives each guarantee) outside fenced code.
func anchors(text string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	for _, l := range prose(text) {
		for _, m := range htmlAnchor.FindAllStringSubmatch(l, -1) {
			out[m[1]] = true
		}
	}
	_, texts := headings(text)
	for _, h := range texts {
		h = mdLink.ReplaceAllString(h, "$1")
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// checkTarget says what is wrong with target, a link in file (relative to
// root), or "" if it resolves: the file or directory exists in the
// repository, and a fragment into a Markdown file names one of its headings.
func checkTarget(root, file, target string) string {
	if u := repoURL.FindString(target); u != "" {
		target = "/" + strings.TrimPrefix(target, u)
	} else if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return ""
	}
	path, frag, _ := strings.Cut(target, "#")
	switch {
	case path == "":
		path = file
	case strings.HasPrefix(path, "/"):
		path = filepath.Clean(strings.TrimPrefix(path, "/"))
	default:
		path = filepath.Join(filepath.Dir(file), path)
	}
	if path == ".." || strings.HasPrefix(path, "../") {
		return "outside the repository"
	}
	info, err := os.Stat(filepath.Join(root, path))
	if err != nil {
		return "no such file or directory: " + path
	}
	if frag == "" || info.IsDir() || !strings.HasSuffix(path, ".md") {
		return ""
	}
	text, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		return err.Error()
	}
	if !anchors(string(text))[frag] {
		return "no heading #" + frag + " in " + path
	}
	return ""
}

// TestEveryRepositoryLinkResolves reads every Markdown file and holds each
// link into the repository (relative, rooted, or this repository's GitHub
// URL) to a file or directory that exists and, for a fragment into
// Markdown, to one of its headings; and openapi.yaml's links the same way.
func TestEveryRepositoryLinkResolves(t *testing.T) {
	root := projectRoot(t)
	files := markdownFiles(t, root)
	if !slices.Contains(files, "README.md") || !slices.Contains(files, filepath.Join("docs", "http-api.md")) {
		t.Fatalf("the walk found %v, without README.md or docs/http-api.md", files)
	}
	checked := 0
	for _, file := range files {
		text, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range prose(string(text)) {
			var targets []string
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				targets = append(targets, m[1])
			}
			for _, m := range href.FindAllStringSubmatch(line, -1) {
				targets = append(targets, m[1])
			}
			if m := refDef.FindStringSubmatch(line); m != nil {
				targets = append(targets, m[1])
			}
			for _, target := range targets {
				checked++
				if why := checkTarget(root, file, target); why != "" {
					t.Errorf("%s:%d: (%s): %s", file, i+1, target, why)
				}
			}
		}
	}
	doc, err := os.ReadFile(filepath.Join(root, "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range regexp.MustCompile(`https://github\.com/idemkeys/idem/\S*`).FindAllString(string(doc), -1) {
		checked++
		if why := checkTarget(root, "openapi.yaml", strings.Trim(target, `'",`)); why != "" {
			t.Errorf("openapi.yaml: (%s): %s", target, why)
		}
	}
	t.Logf("%d links in %d Markdown files and openapi.yaml", checked, len(files))
}

// TestEveryProblemCodeHasItsSection holds docs/http-api.md's "Problems" to
// the codes the source can answer (see problemCodes): one heading per
// code, its text the code itself, so that ProblemBase + code is the
// section's URL; and no heading there for a code the source does not answer.
func TestEveryProblemCodeHasItsSection(t *testing.T) {
	root := projectRoot(t)
	text, err := os.ReadFile(filepath.Join(root, "docs", "http-api.md"))
	if err != nil {
		t.Fatal(err)
	}
	levels, texts := headings(string(text))
	var sections []string
	in := false
	for i, h := range texts {
		switch {
		case levels[i] <= 2:
			in = h == "Problems"
		case in && levels[i] == 3:
			sections = append(sections, h)
		}
	}
	slices.Sort(sections)
	codes := sortedKeys(problemCodes(t, root))
	missing, extra := difference(codes, sections), difference(sections, codes)
	if len(missing) > 0 || len(extra) > 0 {
		t.Errorf("docs/http-api.md, Problems: no section for %v; sections for codes the source does not answer: %v", missing, extra)
	}
	a := anchors(string(text))
	for _, c := range codes {
		if !a[c] {
			t.Errorf("%s does not resolve", ProblemBase+c)
		}
	}
}

// difference is what of a (sorted) is not in b.
func difference(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}
