package fleet

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/machines/vm"
	"github.com/rdmalab/rdmalab/terminals/terminal"

	"github.com/rdmalab/rdmalab"
)

// BenchmarkTerminalEcho is a keystroke's round trip — the key sent, its
// echo back from the shell in the learner's guest — for a terminal on this
// machine (terminal.Terminals in this process) and for one on a real `labserver
// worker --terminals 1` process over the embedded NATS server, measured in
// the same run from the same image (TCG): p50 and p95 of 60 keys each,
// and worker-p50 / local-p50.
func BenchmarkTerminalEcho(b *testing.B) {
	env := guestWorkerEnv(b, "boots Soft-RoCE guests in worker processes")
	bin := labserverBin(b)
	s := startServer(b, "127.0.0.1:0")
	defer s.Close()
	startWorkerEnv(b, env, s.Addr(), "echo-w", token, "--host-slots", "0", "--terminals", "1")
	waitTermWorker(b, s, "echo-w")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	remote, err := s.TermAttach(ctx, "echo-w", "bench", 24, 80) // the worker builds the image if it must
	if err != nil {
		b.Fatal(err)
	}
	defer remote.Detach()

	agent := filepath.Join(filepath.Dir(bin), "labagent")
	if _, err := os.Stat(agent); err != nil {
		b.Fatalf("labagent beside %s: %v", bin, err)
	}
	local := &terminal.Terminals{Cfg: vm.Config{Dir: guestCache, Agent: agent, Accel: vm.AccelTCG, BootTimeout: 3 * time.Minute}, Max: 1, Spares: -1}
	defer local.Close()
	la, err := local.Attach(ctx, "bench", 24, 80)
	if err != nil {
		b.Fatal(err)
	}
	defer la.Detach()

	var lp, wp []float64
	for i := 0; i < b.N; i++ {
		wp = append(wp, echoes(b, remote)...)
		lp = append(lp, echoes(b, la)...)
	}
	slices.Sort(lp)
	slices.Sort(wp)
	q := func(xs []float64, p int) float64 { return xs[min(len(xs)-1, (len(xs)*p+99)/100-1)] }
	b.ReportMetric(q(lp, 50), "local-p50-ms")
	b.ReportMetric(q(lp, 95), "local-p95-ms")
	b.ReportMetric(q(wp, 50), "worker-p50-ms")
	b.ReportMetric(q(wp, 95), "worker-p95-ms")
	b.ReportMetric(q(wp, 50)/q(lp, 50), "ratio")
	b.Logf("keystroke echo: local p50 %.2f ms p95 %.2f ms; on a worker p50 %.2f ms p95 %.2f ms",
		q(lp, 50), q(lp, 95), q(wp, 50), q(wp, 95))
}

// echoes waits for c's prompt, then types 60 keys one at a time, each sent
// when the last one's echo came back, and returns each round trip in ms.
func echoes(b *testing.B, c rdmalab.TermConn) []float64 {
	b.Helper()
	var seen strings.Builder
	seen.Write(c.Recent())
	read := func(want string) {
		deadline := time.After(5 * time.Minute)
		for !strings.Contains(seen.String(), want) {
			select {
			case out, ok := <-c.Output():
				if !ok {
					b.Fatalf("the terminal ended before %q; it said:\n%s", want, seen.String())
				}
				seen.Write(out)
			case <-deadline:
				b.Fatalf("no %q from the terminal; it said:\n%s", want, seen.String())
			}
		}
	}
	_ = c.Write([]byte("echo ready-$((4*5))\r"))
	read("ready-20")
	var ds []float64
	for i := range 60 {
		key := string(rune('a' + i%26))
		seen.Reset()
		start := time.Now()
		if err := c.Write([]byte(key)); err != nil {
			b.Fatal(err)
		}
		read(key)
		ds = append(ds, float64(time.Since(start).Microseconds())/1000)
	}
	_ = c.Write([]byte("\x15")) // Ctrl-U: the line typed goes
	return ds
}
