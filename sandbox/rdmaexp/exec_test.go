package rdmaexp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/labproc"
	"github.com/rdmalab/rdmalab/machines/vm"
	"github.com/rdmalab/rdmalab/machines/vmimage"
	"github.com/rdmalab/rdmalab/sandbox"
)

// executor runs one experiment with raw params and returns its events; it
// fails the test when the run fails.
type executor interface {
	run(t testing.TB, id string, raw map[string]any) *recorder
	// interact starts an interactive run fed by cmds; done yields its error.
	// Cancelling ctx stops it as a learner's Cancel does.
	interact(ctx context.Context, t testing.TB, id string, cmds <-chan sandbox.Command) (*recorder, <-chan error)
	name() string
}

// localExec runs experiments in this process (this kernel has devices).
type localExec struct{}

func (localExec) name() string { return "this machine" }

func (localExec) run(t testing.TB, id string, raw map[string]any) *recorder {
	t.Helper()
	e := registry().Get(id)
	p, err := e.Validate(raw)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	ctx, cancel := context.WithTimeout(context.Background(), e.Timeout)
	defer cancel()
	if err := e.Run(ctx, p, rec); err != nil {
		rec.dump(t)
		t.Fatalf("%s: %v", id, err)
	}
	return rec
}

func (localExec) interact(ctx context.Context, t testing.TB, id string, cmds <-chan sandbox.Command) (*recorder, <-chan error) {
	e := registry().Get(id)
	rec := &recorder{}
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(ctx, e.Timeout)
		defer cancel()
		done <- e.Run(sandbox.WithCommands(ctx, cmds), e.Defaults(), rec)
	}()
	return rec, done
}

func (g guestExec) interact(ctx context.Context, t testing.TB, id string, cmds <-chan sandbox.Command) (*recorder, <-chan error) {
	e := registry().Get(id)
	rec := &recorder{}
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(ctx, e.Timeout)
		defer cancel()
		req := sandbox.Request{RunID: fmt.Sprintf("test-%d", time.Now().UnixNano()), Experiment: id, Params: e.Defaults()}
		done <- g.b.Exec(ctx, sandbox.NewSession(req, cmds, rec.Emit))
	}()
	return rec, done
}

// guestExec runs experiments in the lab's Soft-RoCE guest through the vm
// backend: params validated here (as the server does), again by the agent
// in the guest.
type guestExec struct{ b *vm.Backend }

func (guestExec) name() string { return "the Soft-RoCE guest" }

func (g guestExec) run(t testing.TB, id string, raw map[string]any) *recorder {
	t.Helper()
	e := registry().Get(id)
	p, err := e.Validate(raw)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	ctx, cancel := context.WithTimeout(context.Background(), e.Timeout+time.Minute)
	defer cancel()
	if err := g.b.Exec(ctx, sandbox.NewSession(sandbox.Request{RunID: fmt.Sprintf("test-%d", time.Now().UnixNano()), Experiment: id, Params: p}, nil, rec.Emit)); err != nil {
		rec.dump(t)
		t.Fatalf("%s in the guest: %v", id, err)
	}
	return rec
}

// reused holds the first run of each (experiment, params) that a test ran
// through reuseRun, so that another test needing exactly that run reads
// its events instead of running it again in the shared guest: TestPerfOnDevices'
// runs are the first of TestPerfVerdictsHold's reruns of the same presets.
// Each test still checks everything it checked on a run of its own; run
// alone (go test -run), a test runs what it needs itself.
var reused struct {
	sync.Mutex
	runs map[string]*recorder
}

// reuseRun is ex.run(t, id, raw), or the events of the same run (same
// experiment, same params once defaults fill in) an earlier test made
// through reuseRun; it says which. Keep it for runs whose events the
// tests only read, never for runs that must see the state a test left.
func reuseRun(t testing.TB, ex executor, id string, raw map[string]any) (*recorder, bool) {
	t.Helper()
	p, err := registry().Get(id).Validate(raw)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(p) // map keys sorted: one key per params
	if err != nil {
		t.Fatal(err)
	}
	key := ex.name() + "\x00" + id + "\x00" + string(b)
	reused.Lock()
	rec := reused.runs[key]
	reused.Unlock()
	if rec != nil {
		t.Logf("%s %s: the events of the run an earlier test made", id, b)
		return rec, true
	}
	rec = ex.run(t, id, raw)
	reused.Lock()
	if reused.runs == nil {
		reused.runs = map[string]*recorder{}
	}
	reused.runs[key] = rec
	reused.Unlock()
	return rec, false
}

// pickExecutor uses this machine when its kernel has RDMA devices, else
// boots the lab guest (once for the whole test binary).
func pickExecutor(t *testing.T) executor {
	t.Helper()
	if _, err := pickTopology(); err == nil {
		t.Log("RDMA devices on this kernel: experiments run here")
		return localExec{}
	} else {
		t.Logf("this kernel has no usable RDMA device (%v): experiments run in the Soft-RoCE guest", err)
	}
	b := labGuest(t)
	return guestExec{b: b}
}

var (
	guestOnce sync.Once
	guestB    *vm.Backend
	guestErr  error
	guestTmp  string
)

// labGuest builds labagent and the guest image from this tree into a temp
// dir and boots one guest for the whole test binary (closed in TestMain).
func labGuest(t testing.TB) *vm.Backend {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: this kernel has no RDMA device and the Soft-RoCE guest (QEMU) is not booted in the quick tier")
	}
	guestOnce.Do(func() {
		guestErr = func() error {
			dir, err := os.MkdirTemp("", "rdmaexp-guest-")
			if err != nil {
				return err
			}
			guestTmp = dir
			img := filepath.Join(dir, "image")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			agent, err := labproc.BuildAgent(ctx, dir) // the guest's agent binary
			if err != nil {
				return err
			}
			if _, _, err := vmimage.Build(ctx, vmimage.BuildOptions{Dir: img, Agent: agent}); err != nil {
				return fmt.Errorf("build the guest image: %w", err)
			}
			guestB = vm.New(vm.Config{Dir: img, Agent: agent, MemoryMiB: 512, BootTimeout: 3 * time.Minute,
				Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
			guestB.Start()
			if _, err := guestB.WaitReady(ctx); err != nil {
				return err
			}
			return nil
		}()
	})
	if guestErr != nil {
		t.Fatalf("the Soft-RoCE guest: %v", guestErr)
	}
	return guestB
}

func closeGuest() {
	if guestB != nil {
		guestB.Close()
	}
	if guestTmp != "" && strings.Contains(guestTmp, "rdmaexp-guest-") {
		os.RemoveAll(guestTmp)
	}
}
