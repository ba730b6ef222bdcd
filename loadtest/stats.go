// Package loadtest drives a real labserver on loopback with many
// concurrent learners and event-stream watchers and reports latency
// percentiles, errors and whether every acknowledged write reached the
// database. The test is load_test.go; this file holds the bookkeeping.
package loadtest

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// recorder collects latencies per operation and errors, safe for
// concurrent use.
type recorder struct {
	mu      sync.Mutex
	lat     map[string][]time.Duration
	errs    map[string]int    // operation → count
	samples map[string]string // operation → first error text
	counts  map[string]int    // named counters (reconnects, rate-limited…)
	// Latencies observed before until go to warm instead (the warm-up);
	// errors and counters are kept whenever they happen.
	until time.Time
	warm  *recorder
}

func newRecorder() *recorder {
	return &recorder{lat: map[string][]time.Duration{}, errs: map[string]int{},
		samples: map[string]string{}, counts: map[string]int{}}
}

func (r *recorder) observe(op string, d time.Duration) {
	if r.warm != nil && time.Now().Before(r.until) {
		r.warm.observe(op, d)
		return
	}
	r.mu.Lock()
	r.lat[op] = append(r.lat[op], d)
	r.mu.Unlock()
}

func (r *recorder) fail(op string, format string, args ...any) {
	r.mu.Lock()
	r.errs[op]++
	if _, ok := r.samples[op]; !ok {
		r.samples[op] = fmt.Sprintf(format, args...)
	}
	r.mu.Unlock()
}

func (r *recorder) count(name string) {
	r.mu.Lock()
	r.counts[name]++
	r.mu.Unlock()
}

// opStats is one row of the report.
type opStats struct {
	Op            string
	N, Errors     int
	P50, P99, Max time.Duration
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p)
	return sorted[i]
}

func summarize(op string, ds []time.Duration, errs int) opStats {
	s := slices.Clone(ds)
	slices.Sort(s)
	st := opStats{Op: op, N: len(s), Errors: errs}
	if len(s) > 0 {
		st.P50, st.P99, st.Max = percentile(s, 0.50), percentile(s, 0.99), s[len(s)-1]
	}
	return st
}

// httpOps are the plain request/response operations; "requests" in the
// report is all of them together.
var httpOps = map[string]bool{"home": true, "lesson": true, "static": true, "quiz": true,
	"run-submit": true, "run-status": true}

// report returns the rows: every operation, then "requests" (all plain
// HTTP requests together), and the total error count.
func (r *recorder) report() ([]opStats, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ops := map[string]bool{}
	for op := range r.lat {
		ops[op] = true
	}
	for op := range r.errs {
		ops[op] = true
	}
	names := make([]string, 0, len(ops))
	for op := range ops {
		names = append(names, op)
	}
	sort.Strings(names)
	var rows []opStats
	var all []time.Duration
	allErrs, total := 0, 0
	for _, op := range names {
		rows = append(rows, summarize(op, r.lat[op], r.errs[op]))
		total += r.errs[op]
		if httpOps[op] {
			all = append(all, r.lat[op]...)
			allErrs += r.errs[op]
		}
	}
	rows = append(rows, summarize("requests", all, allErrs))
	return rows, total
}

func (r *recorder) errorSamples() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for op, s := range r.samples {
		fmt.Fprintf(&b, "  %s (%d): %s\n", op, r.errs[op], s)
	}
	return b.String()
}

func (r *recorder) counters() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.counts))
	for k, v := range r.counts {
		out[k] = v
	}
	return out
}

// writeTable prints the rows as an aligned table.
func writeTable(w io.Writer, rows []opStats, elapsed time.Duration) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "operation\tcount\tper s\terrors\tp50\tp99\tmax\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%d\t%s\t%s\t%s\t\n", r.Op, r.N, float64(r.N)/elapsed.Seconds(), r.Errors,
			round(r.P50), round(r.P99), round(r.Max))
	}
	tw.Flush()
}

func round(d time.Duration) string {
	switch {
	case d == 0:
		return "-"
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(100 * time.Microsecond).String()
	default:
		return d.Round(10 * time.Millisecond).String()
	}
}
