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
// image's snapshot (Spares -1: no paused spare hides the restore). Five
// rounds of one learner; medians.
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
	// The first guest boots and saves the image's snapshot; then the
	// learner's machine gets a file and a history line.
	answer("learner", "echo kept-$((6*7)) > ~/kept.txt; echo wrote-$((2+3))", "wrote-5")
	var save, resume, fresh, disk, stream []float64
	for i := 0; i < 5*b.N; i++ {
		res := terms.Reclaim("learner")
		if res.Bytes == 0 {
			b.Fatal("the machine was not kept")
		}
		save = append(save, res.Took.Seconds())
		disk = append(disk, float64(res.Bytes)/1e6)
		stream = append(stream, float64(res.Raw)/1e6)
		// A learner with nothing kept, for the baseline.
		other := fmt.Sprintf("fresh-%d", i)
		d, _ := answer(other, "echo fresh-$((1+1))", "fresh-2")
		fresh = append(fresh, d.Seconds())
		if err := terms.Reset(ctx, other); err != nil {
			b.Fatal(err)
		}
		d, note := answer("learner", `echo "got-$(cat ~/kept.txt)"`, "got-kept-42")
		if note != KeepRestored {
			b.Fatalf("round %d: kept note %q", i, note)
		}
		resume = append(resume, d.Seconds())
	}
	for _, xs := range [][]float64{save, resume, fresh, disk, stream} {
		slices.Sort(xs)
	}
	b.ReportMetric(median(save), "save-s")
	b.ReportMetric(median(resume), "resume-s")
	b.ReportMetric(median(fresh), "fresh-s")
	b.ReportMetric(median(disk), "disk-MB")
	b.ReportMetric(median(stream), "stream-MB")
	b.Logf("kept machine (TCG): save %v s, attach → shell answers %v s (fresh guest %v s), %v MB on disk of a %v MB stream",
		round3(save), round3(resume), round3(fresh), round3(disk), round3(stream))
}
