package rdmaexp

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rdmalab/rdmalab/internal/lineio"
	"github.com/rdmalab/rdmalab/machines/agentproc"
	"golang.org/x/sys/unix"
)

// A guard is a helper process that puts the machine back as it was when a
// run ends, however it ends: the agent is SIGKILLed with its process group
// on cancel, so deferred clean-up in the run never happens. The guard runs
// in its own group without the parent-death signal, takes its request on
// stdin, says "armed", waits for stdin to close (the run released it, or
// died) and then restores. perf-mtu's MTU guard and nvmeof's clean-up
// guard are two.

// startGuard starts the helper name as a guard, sends it req and waits
// until it says "armed". what names it in errors ("the MTU guard"). The
// reader returned is the guard's stdout after "armed".
func startGuard(name, what string, req any) (*agentproc.Proc, *bufio.Reader, error) {
	spec, err := agentproc.Helper(name)
	if err != nil {
		return nil, nil, err
	}
	spec.Group, spec.Outlive = true, true
	p, err := agentproc.Start(spec)
	if err != nil {
		return nil, nil, fmt.Errorf("start %s: %w", what, err)
	}
	out := bufio.NewReader(p.Stdout())
	if err := p.Send(req); err != nil {
		p.Close()
		return nil, nil, fmt.Errorf("arm %s: %w", what, err)
	}
	line, err := lineio.Read(out, 256)
	if err != nil || string(line) != "armed" {
		p.Close()
		return nil, nil, fmt.Errorf("%s did not arm (%q): %v", what, line, err)
	}
	return p, out, nil
}

// guardRequest reads a guard's request (one JSON line) into v; the guard
// then checks it, says "armed" and waits for EOF on the reader returned.
func guardRequest(in io.Reader, v any) (*bufio.Reader, error) {
	r := bufio.NewReader(in)
	line, err := r.ReadBytes('\n')
	if err != nil {
		return nil, err
	}
	return r, json.Unmarshal(line, v)
}

// cleanGuard is a running clean-up guard (nvmeof's, nfs-rdma's): it says
// "armed", waits, cleans up when released or orphaned and then says
// "clean" or what went wrong.
type cleanGuard struct {
	p    *agentproc.Proc
	out  *bufio.Reader // its stdout after "armed": "clean" or the error
	once sync.Once
	err  error
}

// armUnloadGuard starts the unload guard helper for the modules of all
// that are not loaded now (those the run will bring in), and returns them.
func armUnloadGuard(helper, what string, all []string) (*cleanGuard, []string, error) {
	var unload []string
	for _, m := range all {
		if !moduleLoaded(m) {
			unload = append(unload, m)
		}
	}
	g, err := startCleanGuard(helper, what, unloadGuardReq{Unload: unload})
	return g, unload, err
}

// startCleanGuard starts the helper name as a clean-up guard with req.
func startCleanGuard(name, what string, req any) (*cleanGuard, error) {
	p, out, err := startGuard(name, what, req)
	if err != nil {
		return nil, err
	}
	return &cleanGuard{p: p, out: out}, nil
}

// release closes the guard's stdin — it cleans up and exits — and waits
// for it; what it said on stdout is its clean-up error, if any. Only the
// first call does this (a run defers one and calls it at its clean-up
// phase); later calls return the same error.
func (g *cleanGuard) release() error {
	g.once.Do(func() { g.err = g.finish() })
	return g.err
}

func (g *cleanGuard) finish() error {
	g.p.CloseInput()
	res := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(g.out, 4<<10))
		res <- strings.TrimSpace(string(b))
	}()
	var said string
	select {
	case said = <-res:
	case <-time.After(90 * time.Second):
		said = "the guard did not finish within 90 s"
	}
	g.p.Close()
	if said != "" && said != "clean" {
		return errors.New(said)
	}
	return nil
}

// lockFile takes an exclusive flock on path, waiting at most limit; what
// names the experiment in the error. A guard holds its experiment's lock
// from arming to the end of its clean-up, so a run never starts while an
// earlier run's guard (say, of a cancelled run) is still tearing down.
func lockFile(path, what string, limit time.Duration) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(limit); ; {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("an earlier %s run is still cleaning up after %s: %w", what, limit, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// unloadGuardReq is what an unload guard cleans: the modules to unload
// (those the run found absent).
type unloadGuardReq struct {
	Unload []string `json:"unload"`
}

// runUnloadGuard is the body of a clean-up guard that may unload kernel
// modules: it reads the request, refuses any module not in allowed, takes
// the experiment's lock (see lockFile), says "armed", blocks until its
// stdin closes (the experiment finished, or was killed), then runs clean
// and says "clean" or the error.
func runUnloadGuard(in io.Reader, out io.Writer, allowed []string, lock, what string, clean func(unload []string) error) error {
	var req unloadGuardReq
	r, err := guardRequest(in, &req)
	if err != nil {
		return err
	}
	for _, m := range req.Unload {
		if !slices.Contains(allowed, m) {
			return fmt.Errorf("%s guard: refusing to unload %q", what, m)
		}
	}
	unlock, err := lockFile(lock, what, 2*time.Minute)
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := io.WriteString(out, "armed\n"); err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, r) // until EOF
	if err := clean(req.Unload); err != nil {
		_, _ = io.WriteString(out, err.Error()+"\n")
		return nil
	}
	_, _ = io.WriteString(out, "clean\n")
	return nil
}
