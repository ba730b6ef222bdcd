// Command testtimes reads `go test -json` on stdin and says where the time
// went: the slowest tests (and, with -sub, subtests) with their packages,
// after the packages' own times. With -echo it also prints what `go test`
// without -json prints, as it goes: an "ok" (or "?") line per passing
// package, the whole output of a failing test (its logs and its --- FAIL
// line), and the output of a failing package outside its tests (a panic,
// a timeout, TestMain's own lines). `make test` pipes its go test through
// it (with pipefail, so the exit code stays go test's).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent, and
// the go command's build events, which name the package ImportPath).
type event struct {
	Time       time.Time
	Action     string
	Package    string
	ImportPath string
	Test       string
	Elapsed    float64 // seconds
	Output     string
}

// timing is how long one test (or package) took and how it ended.
type timing struct {
	pkg, test string
	secs      float64
	action    string
}

// pkgState is what -echo holds back of one package until its tests end.
type pkgState struct {
	own   []string            // output outside any test
	tests map[string][]string // a running test's output
	order []string            // tests in the order they started, for a timeout's dump
}

func main() {
	n := flag.Int("n", 15, "how many of the slowest to list (0: all)")
	sub := flag.Bool("sub", false, "rank subtests too (default: top-level tests only)")
	echo := flag.Bool("echo", false, "print go test's usual (non -v) output while reading")
	prefix := flag.String("trim", "", "package path prefix to leave out of the table")
	flag.Parse()
	tests, pkgs, err := read(os.Stdin, os.Stdout, *echo)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testtimes:", err)
		os.Exit(2)
	}
	report(os.Stdout, tests, pkgs, *n, *sub, *prefix)
}

// read consumes every event (also after a bad line: go test must never
// block on a full pipe), echoing as -echo asks, and returns the tests'
// and the packages' times.
func read(r io.Reader, w io.Writer, echo bool) (tests, pkgs []timing, err error) {
	state := map[string]*pkgState{}
	get := func(pkg string) *pkgState {
		s := state[pkg]
		if s == nil {
			s = &pkgState{tests: map[string][]string{}}
			state[pkg] = s
		}
		return s
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if json.Unmarshal(line, &e) != nil || (e.Action == "" && e.Output == "") {
			// not an event (go vet's or the go command's own text): as is
			if echo {
				fmt.Fprintf(w, "%s\n", line)
			}
			continue
		}
		if e.Package == "" {
			e.Package = e.ImportPath
		}
		switch {
		case e.Action == "build-output":
			if echo {
				io.WriteString(w, e.Output)
			}
		case e.Action == "build-fail":
		case e.Test != "":
			s := get(e.Package)
			switch e.Action {
			case "run":
				s.order = append(s.order, e.Test)
			case "output":
				if !framing(e.Output) {
					s.tests[e.Test] = append(s.tests[e.Test], e.Output)
				}
			case "pass", "skip", "fail":
				if echo && e.Action == "fail" {
					io.WriteString(w, strings.Join(s.tests[e.Test], ""))
				}
				delete(s.tests, e.Test)
				tests = append(tests, timing{e.Package, e.Test, e.Elapsed, e.Action})
			}
		default: // the package itself
			s := get(e.Package)
			switch e.Action {
			case "output":
				s.own = append(s.own, e.Output)
			case "pass", "skip", "fail":
				if echo {
					flushPackage(w, s, e.Action == "fail")
				}
				delete(state, e.Package)
				if e.Action != "skip" {
					pkgs = append(pkgs, timing{e.Package, "", e.Elapsed, e.Action})
				}
			}
		}
	}
	if echo { // a cut stream: whatever is left, as a failing package's
		for _, s := range state {
			flushPackage(w, s, true)
		}
	}
	return tests, pkgs, sc.Err()
}

// flushPackage prints what go test prints of a finished package: all of
// a failing one's own output and that of tests it never finished (a
// timeout's panic names them); of a passing one the "ok" line alone.
func flushPackage(w io.Writer, s *pkgState, failed bool) {
	if !failed {
		for _, l := range s.own {
			if strings.HasPrefix(l, "ok ") || strings.HasPrefix(l, "?") {
				io.WriteString(w, l)
			}
		}
		return
	}
	for _, t := range s.order {
		if out, ok := s.tests[t]; ok {
			io.WriteString(w, strings.Join(out, ""))
		}
	}
	io.WriteString(w, strings.Join(s.own, ""))
}

// report prints the packages by time, then the n slowest tests.
func report(w io.Writer, tests, pkgs []timing, n int, sub bool, prefix string) {
	if len(tests) == 0 {
		return
	}
	short := func(p string) string {
		if prefix != "" {
			if s := strings.TrimPrefix(p, prefix); s != p {
				return strings.TrimPrefix(s, "/")
			}
		}
		return p
	}
	byTime := func(a, b timing) int {
		if a.secs != b.secs {
			if a.secs > b.secs {
				return -1
			}
			return 1
		}
		return strings.Compare(a.pkg+" "+a.test, b.pkg+" "+b.test)
	}
	var ranked []timing
	for _, t := range tests {
		if sub || !strings.Contains(t.test, "/") {
			ranked = append(ranked, t)
		}
	}
	slices.SortFunc(ranked, byTime)
	if n > 0 && len(ranked) > n {
		ranked = ranked[:n]
	}
	slices.SortFunc(pkgs, byTime)
	var total float64
	for _, p := range pkgs {
		total += p.secs
	}
	fmt.Fprintf(w, "\ntest time by package (%.0f s in all; go test runs them side by side):\n", total)
	for i, p := range pkgs {
		if n > 0 && i == n {
			break
		}
		fmt.Fprintf(w, "  %8.1f s  %s%s\n", p.secs, short(p.pkg), mark(p.action))
	}
	what := "tests"
	if sub {
		what = "tests and subtests"
	}
	fmt.Fprintf(w, "the %d slowest %s:\n", len(ranked), what)
	for _, t := range ranked {
		fmt.Fprintf(w, "  %8.1f s  %s %s%s\n", t.secs, short(t.pkg), t.test, mark(t.action))
	}
}

// framing is a line -json adds (-test.v) that go test's usual output
// does not have.
func framing(line string) bool {
	for _, p := range []string{"=== RUN ", "=== PAUSE ", "=== CONT ", "=== NAME "} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return false
}

func mark(action string) string {
	if action == "pass" {
		return ""
	}
	return " (" + action + ")"
}
