package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxPackageLines bounds the code of one package of the command: past it,
// a package is doing the work of several (the command was once one
// 4,800-line package main). Tests do not count: they grow with what a
// package promises, not with what it does.
const maxPackageLines = 1000

// TestNoPackageOverAThousandLines keeps every package of cmd/seam under
// maxPackageLines lines of non-test Go.
func TestNoPackageOverAThousandLines(t *testing.T) {
	lines := map[string]int{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		lines[filepath.Dir(path)] += bytes.Count(b, []byte("\n"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) < 10 {
		t.Fatalf("found only %d packages under cmd/seam: %v", len(lines), lines)
	}
	for dir, n := range lines {
		if n > maxPackageLines {
			t.Errorf("cmd/seam/%s holds %d lines of Go (without tests), over %d: split it by what it does", dir, n, maxPackageLines)
		}
	}
}
