package vm

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/machines/vmimage"
	"github.com/rdmalab/rdmalab/machines/vmproto"
)

// BenchmarkAgentStart is the start of one agent process inside the guest
// (exec → its answer to a request → exit), median of agentStarts, for the
// small agent binary the guest runs (labagent) against the full labserver
// binary's `agent` entry (which initializes the web and Markdown stack:
// chroma, goldmark, templ, SQLite …) in the same guest, turn about. Both
// answer the same request (an unknown experiment: one error event), so
// the time is the process start. The guest's /proc/uptime is the clock
// (10 ms steps). init-ms is the sum of the package inits GODEBUG=inittrace
// reports, once per binary.
func BenchmarkAgentStart(b *testing.B) {
	cfg := testConfig(b)
	// The guest normally has no labserver; this image carries it too, and
	// the guest gets the RAM to unpack it (initramfs is at most half of it).
	cfg.Dir = b.TempDir()
	cfg.MemoryMiB = 512
	_, _, err := vmimage.Build(context.Background(), vmimage.BuildOptions{
		Dir: cfg.Dir, Agent: cfg.Agent,
		Extra: map[string]string{"usr/bin/labserver": labserver(b)},
	})
	if err != nil {
		b.Fatal(err)
	}
	im, err := vmimage.LoadImage(cfg.Dir)
	if err != nil {
		b.Fatal(err)
	}
	accel := AccelTCG
	if os.Getenv("LAB_VM_ACCEL") == AccelKVM {
		accel = AccelKVM
	}
	g, err := StartGuest(context.Background(), cfg, im, accel, false)
	if err != nil {
		b.Fatal(err)
	}
	defer g.Stop()
	var (
		mu  sync.Mutex
		out strings.Builder
		got = make(chan struct{}, 1)
	)
	// A shell in the guest, on a channel as package terminal opens one.
	term, err := g.Open(vmproto.HostMsg{Op: vmproto.OpTerm, Rows: 50, Cols: 250}, ChannelOpts{Rated: true, Data: func(p []byte) {
		mu.Lock()
		out.Write(p)
		mu.Unlock()
		select {
		case got <- struct{}{}:
		default:
		}
	}})
	if err != nil {
		b.Fatal(err)
	}
	defer term.Cancel()
	// run types script and waits for its end marker.
	run := func(script string, marker int) string {
		b.Helper()
		end := fmt.Sprintf("end-%d", marker*7)
		if err := term.Send(vmproto.HostMsg{Op: vmproto.OpTermIn, Data: []byte(script + fmt.Sprintf("; echo end-$((%d*7))\n", marker))}); err != nil {
			b.Fatal(err)
		}
		for {
			mu.Lock()
			s := out.String()
			mu.Unlock()
			if strings.Contains(s, end+"\r\n") {
				mu.Lock()
				out.Reset()
				mu.Unlock()
				return s
			}
			select {
			case <-got:
			case err := <-term.End():
				b.Fatalf("the guest's shell ended: %v\n%s", err, s)
			case <-time.After(5 * time.Minute):
				b.Fatalf("no end marker after 5 min:\n%s", s)
			}
		}
	}
	const req = `echo '{"experiment":"no-such-experiment"}'`
	cmds := map[string]string{"new": "/usr/bin/labagent", "old": "/usr/bin/labserver agent"}
	// The spare agent the guest server starts after hello must not share
	// the CPU with the first starts.
	time.Sleep(3 * time.Second)
	times := map[string][]float64{}
	re := regexp.MustCompile(`T:(old|new):([0-9.]+):([0-9.]+)`)
	for i := 0; i < b.N; i++ {
		for n := range agentStarts {
			for _, k := range []string{"old", "new"} {
				s := run(fmt.Sprintf(`read a _ </proc/uptime; %s | %s >/dev/null 2>&1; read z _ </proc/uptime; echo "T:%s:$a:$z"`, req, cmds[k], k), n+2)
				m := re.FindStringSubmatch(s)
				if m == nil || m[1] != k {
					b.Fatalf("no timing line for %s:\n%s", cmds[k], s)
				}
				a, _ := strconv.ParseFloat(m[2], 64)
				z, _ := strconv.ParseFloat(m[3], 64)
				times[k] = append(times[k], z-a)
			}
		}
	}
	// Where the start goes: the package inits of each binary (after the
	// timed starts, so both run from a warm page cache as those did).
	initMS := map[string]float64{}
	slowRE := regexp.MustCompile(`SLOW:(\S+):([0-9.]+)`)
	for _, k := range []string{"old", "new"} {
		s := run(fmt.Sprintf(`%s | GODEBUG=inittrace=1 %s 2>&1 >/dev/null | awk '/^init / {s+=$5; if ($5 >= 20) printf "SLOW:%%s:%%s\n", $2, $5} END {printf "INIT:%s:%%.1f\n", s}'`, req, cmds[k], k), 99)
		m := regexp.MustCompile(`INIT:` + k + `:([0-9.]+)`).FindStringSubmatch(s)
		if m == nil {
			b.Fatalf("no init trace from %s:\n%s", cmds[k], s)
		}
		initMS[k], _ = strconv.ParseFloat(m[1], 64)
		var slow []string
		for _, m := range slowRE.FindAllStringSubmatch(s, -1) {
			slow = append(slow, m[1]+" "+m[2]+" ms")
		}
		b.Logf("%s: package init %.0f ms in all; ≥ 20 ms: %s", cmds[k], initMS[k], strings.Join(slow, ", "))
	}
	newS, oldS := median(times["new"]), median(times["old"])
	b.ReportMetric(newS*1000, "labagent-ms")
	b.ReportMetric(oldS*1000, "labserver-ms")
	if newS > 0 {
		b.ReportMetric(oldS/newS, "labserver/labagent")
	}
	b.ReportMetric(initMS["new"], "labagent-init-ms")
	b.ReportMetric(initMS["old"], "labserver-init-ms")
	b.Logf("agent process start in the guest (%s), %d each, turn about: labagent %v s, median %.0f ms (package init %.0f ms); labserver agent %v s, median %.0f ms (package init %.0f ms)",
		accel, len(times["new"]), round3(times["new"]), newS*1000, initMS["new"], round3(times["old"]), oldS*1000, initMS["old"])
}

// agentStarts is how many times each binary starts per benchmark round.
const agentStarts = 15
