package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseLine(t *testing.T) {
	for _, tc := range []struct {
		line string
		name string
		n    int64
		m    map[string]float64
	}{
		{"BenchmarkLessonPageVsServeContent-2   \t    1234\t    945678 ns/op\t  0.85 ratio\t 1200 handler-ns/op", "BenchmarkLessonPageVsServeContent", 1234,
			map[string]float64{"ns/op": 945678, "ratio": 0.85, "handler-ns/op": 1200}},
		{"BenchmarkSSEFanout/watchers=200/paced=10ms-2  201  10123 ns/op  5.5e+03 p50-µs", "BenchmarkSSEFanout/watchers=200/paced=10ms", 201,
			map[string]float64{"ns/op": 10123, "p50-µs": 5500}},
		{"BenchmarkFidelity 1 123 ns/op", "BenchmarkFidelity", 1, map[string]float64{"ns/op": 123}},
	} {
		r, ok := parseLine(tc.line)
		if !ok || r.Name != tc.name || r.N != tc.n {
			t.Errorf("%q: %+v %v", tc.line, r, ok)
			continue
		}
		for k, v := range tc.m {
			if r.Metrics[k] != v {
				t.Errorf("%q: %s = %v, want %v", tc.line, k, r.Metrics[k], v)
			}
		}
	}
	for _, line := range []string{"PASS", "ok  github.com/x 1.2s", "goos: linux", "BenchmarkX-2 --- FAIL", "    bench_test.go:12: hello"} {
		if _, ok := parseLine(line); ok {
			t.Errorf("%q parsed as a result", line)
		}
	}
}

// TestTable: measured rows show both figures and the ratio; a benchmark
// that failed leaves its rows with the reason, never a made-up number.
func TestTable(t *testing.T) {
	res := map[string]result{}
	for _, line := range []string{
		"BenchmarkLessonPageVsServeContent-2 100 1 ns/op 0.8 ratio 250000 handler-ns/op 200000 servecontent-ns/op",
		"BenchmarkSSEFanout/watchers=1/paced=10ms-2 100 1 ns/op 400 p50-µs 900 p99-µs",
		"BenchmarkSSEFanout/watchers=200/paced=10ms-2 100 1 ns/op 1200 p50-µs 4000 p99-µs",
	} {
		r, ok := parseLine(line)
		if !ok {
			t.Fatal(line)
		}
		res[r.Name] = r
	}
	rows := table(res, map[string]string{"BenchmarkFidelity": "exit status 1 after 3m\nmore"})
	var buf bytes.Buffer
	writeTable(&buf, rows)
	out := buf.String()
	for _, want := range []string{"250 µs", "200 µs", "0.8", "1.20 ms", "0.40 ms", "3", "(exit status 1 after 3m)", "(not run)"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
