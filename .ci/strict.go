//go:build ignore

// Command strict is go test for CI: it runs `go test -json` with its own
// arguments and prints what go test prints without -json (each package's
// result; the whole output of a failing test or package, and of a build
// that failed), then fails when go test failed or when any test skipped.
// A skipped test is a check that passed without looking, and in CI
// everything a test needs (the corpus, PostgreSQL's binaries, NATS,
// kubectl, prometheus) is provided, so a skip means CI lost something.
// The last line counts the tests (subtests included) as
// "N passed, N failed, N skipped".
//
// Run it as `go run .ci/strict.go [go test flags] packages`; make test
// and make test-race do when SEAM_TEST_STRICT=1, as .ci/run sets.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
)

// event is one line of go test -json (cmd/test2json's TestEvent) or of
// the build output go test -json interleaves with it.
type event struct {
	Action     string
	Package    string
	ImportPath string
	Test       string
	Output     string
}

type key struct{ pkg, test string }

type skip struct {
	key
	why string
}

func main() {
	cmd := exec.Command("go", append([]string{"test", "-json"}, os.Args[1:]...)...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "strict:", err)
		os.Exit(2)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "strict:", err)
		os.Exit(2)
	}
	r := newRun(os.Stdout)
	readErr := r.read(stdout)
	if readErr != nil {
		fmt.Fprintln(os.Stderr, "strict: reading go test -json:", readErr)
	}
	failed := cmd.Wait() != nil || readErr != nil
	if !r.summary() || failed {
		os.Exit(1)
	}
}

// run folds go test's events into go test's plain output.
type run struct {
	out            io.Writer
	output         map[key]*strings.Builder
	skips          []skip
	passed, failed int
}

func newRun(out io.Writer) *run {
	return &run{out: out, output: map[key]*strings.Builder{}}
}

func (r *run) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			// Not an event (go test's own complaint about its flags, say):
			// as it is.
			fmt.Fprintf(r.out, "%s\n", line)
			continue
		}
		r.event(e)
	}
	return sc.Err()
}

func (r *run) event(e event) {
	k := key{e.Package, e.Test}
	switch e.Action {
	case "build-output":
		fmt.Fprint(r.out, e.Output)
	case "output":
		b := r.output[k]
		if b == nil {
			b = &strings.Builder{}
			r.output[k] = b
		}
		b.WriteString(e.Output)
	case "pass", "fail", "skip":
		if e.Test == "" {
			r.packageDone(e)
			return
		}
		switch e.Action {
		case "pass":
			r.passed++
		case "fail":
			r.failed++
			fmt.Fprint(r.out, r.take(k))
		case "skip":
			r.skips = append(r.skips, skip{k, skipReason(r.take(k))})
		}
		delete(r.output, k)
	}
}

// packageDone prints a package's result line, and on failure all it
// printed outside a finished test (TestMain's output, a panic, a timeout)
// with the output of the tests it was running.
func (r *run) packageDone(e event) {
	own := r.take(key{e.Package, ""})
	delete(r.output, key{e.Package, ""})
	if e.Action != "fail" {
		for _, line := range strings.SplitAfter(own, "\n") {
			if strings.HasPrefix(line, "ok  ") || strings.HasPrefix(line, "?   ") {
				fmt.Fprint(r.out, line)
			}
		}
		return
	}
	var running []key
	for k := range r.output {
		if k.pkg == e.Package {
			running = append(running, k)
		}
	}
	sort.Slice(running, func(i, j int) bool { return running[i].test < running[j].test })
	for _, k := range running {
		fmt.Fprint(r.out, r.take(k))
		delete(r.output, k)
	}
	fmt.Fprint(r.out, own)
}

func (r *run) take(k key) string {
	if b := r.output[k]; b != nil {
		return b.String()
	}
	return ""
}

// skipReason is what a skipped test said: its output less go test's own
// === and --- lines.
func skipReason(out string) string {
	var why []string
	for _, line := range strings.Split(out, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		why = append(why, t)
	}
	return strings.Join(why, " / ")
}

// summary prints the skips and the counts, and reports whether the run
// may pass: no test skipped.
func (r *run) summary() bool {
	if len(r.skips) > 0 {
		fmt.Fprintf(r.out, "\n%d tests skipped; under SEAM_TEST_STRICT=1 a skip fails the run (CI provides everything the tests need):\n", len(r.skips))
		for _, s := range r.skips {
			fmt.Fprintf(r.out, "SKIP %s %s: %s\n", s.pkg, s.test, s.why)
		}
	}
	fmt.Fprintf(r.out, "tests: %d passed, %d failed, %d skipped\n", r.passed, r.failed, len(r.skips))
	return len(r.skips) == 0
}
