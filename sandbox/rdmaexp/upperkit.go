package rdmaexp

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rdmalab/rdmalab/machines/demanddisk"
	"github.com/rdmalab/rdmalab/sandbox"
)

// Lesson 08 runs the field's own tools (ucx_perftest, fi_pingpong, mpirun)
// rather than our verbs code. This file is what their experiments share:
// a tool run with a fixed command line and environment, in its own process
// group (mpirun's ranks die with it when a run is cancelled), its output
// kept to a bound.

// toolOutputCap bounds what one tool run's output we keep: the tables and
// log lines we parse are at the start and the end; a tool that floods
// (UCX at log level info prints a line per endpoint) loses the middle.
const toolOutputCap = 64 << 10

// capped keeps the first and the last toolOutputCap/2 bytes written to it.
type capped struct {
	mu         sync.Mutex
	head, tail []byte
	dropped    int
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	if room := toolOutputCap/2 - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	c.tail = append(c.tail, p...)
	if over := len(c.tail) - toolOutputCap/2; over > 0 {
		c.dropped += over
		c.tail = append(c.tail[:0], c.tail[over:]...)
	}
	return n, nil
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dropped > 0 {
		return string(c.head) + fmt.Sprintf("\n[… %d bytes left out …]\n", c.dropped) + string(c.tail)
	}
	return string(c.head) + string(c.tail)
}

// tool is one command line of a lesson 08 tool.
type tool struct {
	Args []string // Args[0] is the program
	Env  []string // added to the agent's environment
	Dir  string
}

// String is the command as a learner would type it.
func (t tool) String() string {
	return strings.TrimSpace(strings.Join(t.Env, " ") + " " + strings.Join(t.Args, " "))
}

// command makes t an exec.Cmd in its own process group; cancelling ctx
// kills the whole group (mpirun's ranks, not only mpirun).
func (t tool) command(ctx context.Context, out *capped) *exec.Cmd {
	cmd := exec.CommandContext(ctx, t.Args[0], t.Args[1:]...)
	cmd.Env = append(os.Environ(), t.Env...)
	cmd.Dir = t.Dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

// upperProcs are the names (/proc/PID/comm) of lesson 08's tools and of
// what they start: mpirun's ranks run the program the MPI experiment
// compiled (mpiProgName). A cancelled run must leave none of them behind.
var upperProcs = []string{"ucx_perftest", "ucx_info", "fi_pingpong", "fi_info", "orterun", "mpirun", "orted", "tcc", mpiProgName}

// toolsLeft counts the running processes named in upperProcs. The
// experiments report it at their start (left_procs_at_start): the guest
// tests cancel a run mid-tool and read it from the next run. (Another
// run in the same guest at the same time would be counted too; these
// experiments do not share their guest while they run.)
func toolsLeft() int {
	n := 0
	comms, _ := filepath.Glob("/proc/[0-9]*/comm")
	for _, c := range comms {
		b, err := os.ReadFile(c)
		if err == nil && slices.Contains(upperProcs, strings.TrimSpace(string(b))) {
			n++
		}
	}
	return n
}

// transportParam is the kernel experiments' (nvmeof, nfs-rdma) choice of
// transports: both in turn, or one.
func transportParam() sandbox.Param {
	return sandbox.Param{Name: "transport", Kind: sandbox.ParamEnum, Title: say("Transport", "传输"), Default: "both", Choices: []sandbox.Choice{
		{Value: "both", Title: say("RDMA, then TCP", "先 RDMA，再 TCP")},
		{Value: "rdma", Title: say("RDMA only", "只用 RDMA")},
		{Value: "tcp", Title: say("TCP only", "只用 TCP")},
	}}
}

// runTool runs t to the end, at most limit.
func runTool(ctx context.Context, t tool, limit time.Duration) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var out capped
	err := t.command(cctx, &out).Run()
	if cctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
		err = fmt.Errorf("%s did not finish within %v", t.Args[0], limit)
	}
	return out.String(), err
}

// runPair starts srv, waits until it listens, then runs cli to the end;
// the server is given a moment to finish and killed after. Both outputs
// come back.
func runPair(ctx context.Context, srv, cli tool, limit time.Duration) (cliOut, srvOut string, err error) {
	cctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var so, co capped
	s := srv.command(cctx, &so)
	if err := s.Start(); err != nil {
		return "", "", fmt.Errorf("start %s: %w", srv.Args[0], err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Wait() }()
	// The server needs a moment to listen; a client that came too early
	// is tried again.
	for try := 0; ; try++ {
		time.Sleep(time.Duration(500+300*try) * time.Millisecond)
		co = capped{}
		err = cli.command(cctx, &co).Run()
		if err == nil || try == 3 || cctx.Err() != nil || !toolRefused(co.String()) {
			break
		}
	}
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		cancel()
		<-done
	}
	if cctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
		err = fmt.Errorf("%s did not finish within %v", cli.Args[0], limit)
	}
	return co.String(), so.String(), err
}

// toolRefused says the client found no server listening yet.
func toolRefused(out string) bool {
	return strings.Contains(out, "Connection refused") || strings.Contains(out, "connection refused")
}

// freePort is a TCP port for a tool's own out-of-band connection, picked
// at random from a range no other experiment uses.
func freePort() int { return 21000 + rand.IntN(4000) }

// lookTool finds a program or says which package brings it and that the
// guest image is built from the host's packages. In the lab's guest it
// first mounts the on-demand disk, where lesson 08's programs and
// libraries live (the first run after a restore pays that); bounded on
// its own, as a mount is not worth cancelling halfway. The bound is
// generous: on this 2-core machine at load 30, an emulated guest's
// modprobe of the disk's two modules once took over 30 s.
func lookTool(name, pkg string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := demanddisk.Mount(ctx); err != nil {
		return "", fmt.Errorf("%s lives on the guest's on-demand disk, which did not mount: %w", name, err)
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s is not installed here: the guest image copies it from the host's Debian package %s (apt-get install %s, then labserver vm build): %w", name, pkg, pkg, err)
	}
	return p, nil
}

// toolNote shows a command line as it was run, as a terminal would: a raw
// line (shown as code, the same in every language).
func toolNote(emit sandbox.Emitter, who string, t tool) {
	rawLine(emit, who+"$ "+t.String())
}

// rawLine is a line of a tool's own text (a command, its complaint): shown
// as code, never translated.
func rawLine(emit sandbox.Emitter, s string) {
	emit.Emit(sandbox.Event{Type: sandbox.EvLog, Level: "stderr", Message: s})
}

// complaint is the lines of a tool's output that say what went wrong
// (UCX's "Fatal:" and "ERROR", Open MPI's and libfabric's errors), at most
// n of them, else its last n lines (a backtrace says nothing to a learner).
func complaint(out string, n int) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "Fatal") || strings.Contains(l, "ERROR") || strings.Contains(l, "rror:") || strings.Contains(l, "[error]") || strings.Contains(l, "ret=-") {
			keep = append(keep, strings.TrimSpace(l))
		}
	}
	if len(keep) == 0 {
		return lastLines(out, n)
	}
	if len(keep) > n {
		keep = keep[:n]
	}
	return strings.Join(keep, "\n")
}

// lastLines is the end of a tool's output for an error message.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// upperRounds is how many rounds lesson 08's comparisons measure each
// figure (DESIGN.md: a verdict must survive a rerun). Each round is a
// whole tool run, seconds long under emulation, so three, as loss-sweep:
// two figures that do not differ part by chance once in 20 runs
// (spread.go's perfRounds). Rounds alternate the two sides, so a drift of
// the machine during the run lands on both.
const upperRounds = 3

// roundsOrder words how a (named who) lies against b over their rounds,
// compared as the table prints them (prec decimals, spread.go's order):
// firm ("who lower" or "who higher" in every round) only when every
// round of one is beyond every round of the other, else that the rounds
// overlap, which says no order. It returns order's figure (1, -1, 0) for
// the run's figures.
func roundsOrder(who sandbox.Text, a, b floatSpread, prec int) (float64, sandbox.Text) {
	o := order(a, b, prec)
	switch o {
	case 1:
		return o, say(fmt.Sprintf("%s higher in each of %d rounds", who["en"], a.N), fmt.Sprintf("%s %d 轮都更高", who["zh"], a.N))
	case -1:
		return o, say(fmt.Sprintf("%s lower in each of %d rounds", who["en"], a.N), fmt.Sprintf("%s %d 轮都更低", who["zh"], a.N))
	}
	return o, say(fmt.Sprintf("the %d rounds overlap: no order, a rerun could turn it around", a.N), fmt.Sprintf("%d 轮的范围互相重叠，分不出先后，重跑一次可能颠倒", a.N))
}
