package terminal

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/machines/vm"

	"github.com/rdmalab/rdmalab/machines/vm/vmtest"
)

// BenchmarkKeptMachine is what keeping a learner's machine costs under
// TCG (keep.go): the save at reclaim (guest paused → compressed file), the
// disk it takes, and the learner's next attach → their shell answers with
// their file there, against a fresh guest restored on demand from the
// image's snapshot (Spares -1: no paused spare hides the restore). Two
// learners in turn: one's machine kept as what differs from the
// snapshot's RAM file (keepdiff.go, serve's), the other's whole (every
// page, as before it: Keep.whole), so both are measured in one run. Five
// rounds; medians.
func BenchmarkKeptMachine(b *testing.B) {
	cfg := testConfig(b)
	cfg.Accel = vm.AccelTCG
	cfg.Dir = vmtest.OwnCache(b)
	cfg.Logger = nil
	keep := &Keep{Dir: b.TempDir()}
	terms := &Terminals{Cfg: cfg, Max: 1, Spares: -1, Keep: keep}
	defer terms.Close()
	ctx := context.Background()
	answer := func(learner, cmd, want string) (time.Duration, KeepNote) {
		start := time.Now()
		a, err := terms.Attach(ctx, learner, 24, 80)
		if err != nil {
			b.Fatal(err)
		}
		if err := a.Write([]byte(cmd + "\n")); err != nil {
			b.Fatal(err)
		}
		readUntil(b, a, want)
		d := time.Since(start)
		a.Detach()
		return d, a.Kept
	}
	// The first guest boots and saves the image's snapshot. Two
	// learners: one's machine is always kept as its differences, the
	// other's always whole (a machine restored from a whole state holds
	// all its RAM itself: it has no snapshot file left to differ from).
	// Each gets a file and a history line.
	write := "echo kept-$((6*7)) > ~/kept.txt; echo wrote-$((2+3))"
	answer("whole", write, "wrote-5")
	keep.whole = true
	if res := terms.Reclaim("whole"); res.Bytes == 0 || res.Base {
		b.Fatalf("kept whole: %+v", res)
	}
	answer("diff", write, "wrote-5")
	type kept struct{ save, resume, disk, stream, diff []float64 }
	var diff, whole kept
	var fresh []float64
	record := func(k *kept, res KeptSave) {
		k.save = append(k.save, res.Took.Seconds())
		k.disk = append(k.disk, float64(res.Bytes)/1e6)
		k.stream = append(k.stream, float64(res.Raw)/1e6)
		k.diff = append(k.diff, float64(res.Diff)/1e6)
	}
	back := func(i int, k *kept, learner string) {
		d, note := answer(learner, `echo "got-$(cat ~/kept.txt)"`, "got-kept-42")
		if note != KeepRestored {
			b.Fatalf("round %d (%s): kept note %q", i, learner, note)
		}
		k.resume = append(k.resume, d.Seconds())
	}
	for i := 0; i < 5*b.N; i++ {
		keep.whole = false
		res := terms.Reclaim("diff")
		if res.Bytes == 0 || !res.Base {
			b.Fatalf("round %d: not kept as its differences: %+v", i, res)
		}
		record(&diff, res)
		keep.whole = true
		back(i, &whole, "whole")
		if res = terms.Reclaim("whole"); res.Bytes == 0 || res.Base {
			b.Fatalf("round %d: not kept whole: %+v", i, res)
		}
		record(&whole, res)
		// A learner with nothing kept, for the baseline.
		other := fmt.Sprintf("fresh-%d", i)
		d, _ := answer(other, "echo fresh-$((1+1))", "fresh-2")
		fresh = append(fresh, d.Seconds())
		if err := terms.Reset(ctx, other); err != nil {
			b.Fatal(err)
		}
		back(i, &diff, "diff")
	}
	for _, xs := range [][]float64{diff.save, diff.resume, diff.disk, diff.stream, diff.diff, whole.save, whole.resume, whole.disk, whole.stream, fresh} {
		slices.Sort(xs)
	}
	b.ReportMetric(median(diff.save), "save-s")
	b.ReportMetric(median(diff.resume), "resume-s")
	b.ReportMetric(median(fresh), "fresh-s")
	b.ReportMetric(median(diff.disk), "disk-MB")
	b.ReportMetric(median(diff.stream), "stream-MB")
	b.ReportMetric(median(diff.diff), "diff-stream-MB")
	b.ReportMetric(median(whole.save), "whole-save-s")
	b.ReportMetric(median(whole.resume), "whole-resume-s")
	b.ReportMetric(median(whole.disk), "whole-disk-MB")
	b.Logf("kept machine (TCG), as its differences from the snapshot: save %v s, attach → shell answers %v s, %v MB on disk of a %v MB stream filtered to %v MB",
		round3(diff.save), round3(diff.resume), round3(diff.disk), round3(diff.stream), round3(diff.diff))
	b.Logf("kept whole (before): save %v s, attach → shell answers %v s, %v MB on disk of a %v MB stream; a fresh guest %v s",
		round3(whole.save), round3(whole.resume), round3(whole.disk), round3(whole.stream), round3(fresh))
}
