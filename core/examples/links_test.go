package examples_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// mdLink finds the target of a Markdown link or image: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocLinksResolve keeps the repository's Markdown navigable as pages
// move between the README and docs/: every relative link names a file
// that exists and, with a #fragment into a Markdown file, a heading of
// that file (as GitHub anchors it). Links in code blocks and to other
// sites are not checked.
func TestDocLinksResolve(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.work")); err != nil {
		t.Skipf("not in the repository (%v); the test runs there only", err)
	}
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && path != root) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("found %d Markdown files under %s; the walk no longer finds the docs", len(files), root)
	}
	checked := 0
	for _, file := range files {
		for i, line := range outsideCode(t, file) {
			if line == "" {
				continue
			}
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, ":") && !strings.HasPrefix(target, "#") || strings.HasPrefix(target, "<") {
					continue // another site, or mail
				}
				checked++
				path, frag, _ := strings.Cut(target, "#")
				dest := file
				if path != "" {
					dest = filepath.Join(filepath.Dir(file), path)
				}
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s:%d: link %s: %v", file, i+1, target, err)
					continue
				}
				if frag != "" && strings.HasSuffix(dest, ".md") && !anchorsOf(t, dest)[frag] {
					t.Errorf("%s:%d: link %s: %s has no heading with the anchor #%s", file, i+1, target, dest, frag)
				}
			}
		}
	}
	if checked < 100 {
		t.Fatalf("checked %d links; the pattern no longer finds them", checked)
	}
}

// outsideCode returns the lines of a Markdown file with those inside
// fenced code blocks blanked, so line numbers stay right.
func outsideCode(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	fence := false
	for i, l := range lines {
		if strings.HasPrefix(l, "```") {
			fence = !fence
			lines[i] = ""
		} else if fence {
			lines[i] = ""
		}
	}
	return lines
}

// anchorsOf returns the anchors GitHub gives the headings of a Markdown
// file: lower case, punctuation dropped, spaces as dashes, and -1, -2 …
// after a repeated one.
func anchorsOf(t *testing.T, file string) map[string]bool {
	t.Helper()
	heading := regexp.MustCompile(`^#{1,6} (.*)`)
	link := regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	out, seen := map[string]bool{}, map[string]int{}
	for _, l := range outsideCode(t, file) {
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		text := strings.ToLower(link.ReplaceAllString(m[1], "$1"))
		var b strings.Builder
		for _, r := range strings.TrimSpace(text) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteByte('-')
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
