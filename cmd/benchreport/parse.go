package main

import (
	"regexp"
	"strconv"
	"strings"
)

// result is one benchmark result line: its name (without the -GOMAXPROCS
// suffix), iterations, and every "value unit" pair on the line.
type result struct {
	Name    string
	N       int64
	Metrics map[string]float64
}

// benchLine matches `BenchmarkName[/sub]-P   N   v unit   v unit …`.
var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+(\d+)\s+(.*)$`)

// parseLine reads one line of `go test -bench` output; ok is false for
// anything that is not a result line.
func parseLine(line string) (result, bool) {
	m := benchLine.FindStringSubmatch(strings.TrimSpace(line))
	if m == nil {
		return result{}, false
	}
	n, err := strconv.ParseInt(m[2], 10, 64)
	if err != nil {
		return result{}, false
	}
	r := result{Name: m[1], N: n, Metrics: map[string]float64{}}
	f := strings.Fields(m[3])
	for i := 0; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return result{}, false
		}
		r.Metrics[f[i+1]] = v
	}
	return r, true
}
