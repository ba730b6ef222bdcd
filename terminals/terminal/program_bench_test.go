package terminal

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/sandbox"

	"github.com/rdmalab/rdmalab/machines/vm"

	"github.com/rdmalab/rdmalab/machines/vm/vmtest"
)

// BenchmarkProgram is a learner's Run on a warm guest (their terminal
// open): press Run → the program compiled and its first output line here,
// median of 5 runs of lesson 04's first solution, against the terminal's
// own open → first prompt measured in the same run (a fresh learner, a
// paused spare guest).
func BenchmarkProgram(b *testing.B) {
	course, err := lessons.Load(lessons.Builtin, lessons.Options{})
	if err != nil {
		b.Fatal(err)
	}
	p := course.Lesson("04-first-program").Programs[0]
	cfg := testConfig(b)
	cfg.Accel = vm.AccelTCG
	cfg.Dir = vmtest.OwnCache(b)
	cfg.Logger = nil
	ctx := context.Background()
	terms := &Terminals{Cfg: cfg, Max: 2}
	defer terms.Close()
	a, err := terms.Attach(ctx, "warm-up", 24, 80) // boots, saves the snapshot, starts the spare
	if err != nil {
		b.Fatal(err)
	}
	readUntil(b, a, "learner@rdmalab-guest")
	a.Detach()
	terms.Discard("warm-up")
	var opens, runs, compiles []float64
	for i := 0; i < b.N; i++ {
		spareReady(terms)
		start := time.Now()
		a, err := terms.Attach(ctx, "learner", 24, 80)
		if err != nil {
			b.Fatal(err)
		}
		readUntil(b, a, "learner@rdmalab-guest")
		opens = append(opens, time.Since(start).Seconds())
		for range 5 {
			start := time.Now()
			first := make(chan time.Time, 1)
			end, err := terms.RunProgram(ctx, "learner", p.Request(p.Solution), "en", func(ev sandbox.Event) {
				if ev.Type == sandbox.EvLog && ev.Name == "stdout" {
					select {
					case first <- time.Now():
					default:
					}
				}
			})
			if err != nil || !end.Passed {
				b.Fatalf("run: %v, passed %v (%s)", err, end.Passed, end.Check)
			}
			runs = append(runs, (<-first).Sub(start).Seconds())
			compiles = append(compiles, float64(end.Millis.Compile)/1000)
		}
		a.Detach()
		terms.Discard("learner")
	}
	med := func(xs []float64) float64 { slices.Sort(xs); return xs[len(xs)/2] }
	b.ReportMetric(med(runs), "run-first-output-s")
	b.ReportMetric(med(compiles), "compile-s")
	b.ReportMetric(med(opens), "open-prompt-s")
}
