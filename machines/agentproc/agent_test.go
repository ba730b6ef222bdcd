package agentproc_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/machines/agentproc"
	"github.com/rdmalab/rdmalab/runs/runner"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/sandboxtest"
)

// These tests run this test binary as the agent, in real child processes,
// through the runner: process groups, kills, stderr and exit reporting.

// envTestAgent makes this test binary act as `labserver agent`: the real
// ServeAgent over stdin/stdout with the test experiments below.
const envTestAgent = "RDMALAB_TEST_AGENT"

// floodBytes is how much the stderr-flood experiment writes without a newline.
const floodBytes = 64 << 20

func TestMain(m *testing.M) {
	if os.Getenv(envTestAgent) != "" {
		err := sandbox.ServeAgent(context.Background(), testRegistry(), os.Stdin, os.Stdout)
		if err != nil {
			fmt.Fprintln(os.Stderr, "test agent:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func testRegistry() *sandbox.Registry {
	reg := sandbox.NewRegistry()
	reg.Register(&sandbox.Experiment{
		ID: "echo", Needs: sandbox.NeedHost, Timeout: 10 * time.Second,
		Params: []sandbox.Param{{Name: "n", Kind: sandbox.ParamInt, Min: 1, Max: 100, Default: int64(3)}},
		Run: func(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
			for i := range p["n"].(int64) {
				emit.Emit(sandbox.Event{Type: sandbox.EvLog, Message: fmt.Sprintf("line %d", i)})
			}
			ok := true
			emit.Emit(sandbox.Event{Type: sandbox.EvResult, OK: &ok, Message: "echoed"})
			return nil
		},
	})
	// stderr-flood writes an endless stderr line, then finishes.
	reg.Register(&sandbox.Experiment{
		ID: "stderr-flood", Needs: sandbox.NeedHost, Timeout: 30 * time.Second,
		Run: func(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
			chunk := []byte(strings.Repeat("x", 64<<10))
			for range floodBytes / len(chunk) {
				if _, err := os.Stderr.Write(chunk); err != nil {
					return err
				}
			}
			os.Stderr.WriteString("\nthe end\n")
			return nil
		},
	})
	// sleeper forks a `sleep` that would outlive the agent, says both pids,
	// then ignores every request to stop: only killing the group ends it.
	reg.Register(&sandbox.Experiment{ID: "sleeper", Needs: sandbox.NeedHost, Timeout: time.Minute, Run: sleeper})
	// slow is the sleeper with a time limit. The limit counts from the
	// agent's start: it must leave room for a race-instrumented agent to
	// start on a loaded machine and say its pids.
	reg.Register(&sandbox.Experiment{ID: "slow", Needs: sandbox.NeedHost, Timeout: 8 * time.Second, Run: sleeper})
	reg.Register(&sandbox.Experiment{
		ID: "garbage", Needs: sandbox.NeedHost, Timeout: 10 * time.Second,
		Run: func(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
			emit.Emit(sandbox.Event{Type: sandbox.EvLog, Message: "about to misbehave"})
			os.Stdout.WriteString("Segmentation fault (not really)\n")
			time.Sleep(time.Minute)
			return nil
		},
	})
	reg.Register(&sandbox.Experiment{
		ID: "crash", Needs: sandbox.NeedHost, Timeout: 10 * time.Second,
		Run: func(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
			emit.Emit(sandbox.Event{Type: sandbox.EvLog, Message: "about to crash"})
			fmt.Fprintln(os.Stderr, "fatal: the experiment lost its marbles")
			os.Exit(3)
			return nil
		},
	})
	// counter is interactive: "add" counts, "done" ends the run.
	reg.Register(&sandbox.Experiment{
		ID: "counter", Needs: sandbox.NeedHost, Timeout: time.Minute,
		Commands: []sandbox.CommandSpec{{Name: "add"}, {Name: "done"}},
		Run: func(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
			n := 0
			emit.Emit(sandbox.Event{Type: sandbox.EvStep, Name: "start"})
			for c := range sandbox.CommandsFrom(ctx) {
				if c.Cmd == "done" {
					break
				}
				n++
				emit.Emit(sandbox.Event{Type: sandbox.EvStep, Name: "add"})
			}
			emit.Emit(sandbox.Event{Type: sandbox.EvLog, Message: fmt.Sprintf("done at %d", n)})
			return nil
		},
	})
	return reg
}

func sleeper(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		return err
	}
	emit.Emit(sandbox.Event{Type: sandbox.EvLog, Message: fmt.Sprintf("pids %d %d", os.Getpid(), cmd.Process.Pid)})
	time.Sleep(5 * time.Minute)
	return nil
}

func newTestRunner(t *testing.T, be sandbox.Backend) (*runner.Runner, *sandboxtest.Recorder) {
	rec := sandboxtest.NewRecorder(t)
	r := runner.New(runner.Config{
		Registry: testRegistry(),
		Backend:  func(sandbox.Need) sandbox.Backend { return be },
		Sink:     rec,
	})
	t.Cleanup(r.Close)
	return r, rec
}

// hostRunner runs this test binary as the agent, in a real child process.
func hostRunner(t *testing.T) (*runner.Runner, *sandboxtest.Recorder) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	be := &agentproc.Agent{Command: []string{exe, "-test.run=^$"}, Env: []string{envTestAgent + "=1"}}
	return newTestRunner(t, be)
}

// pidsOf waits for the sleeper's "pids AGENT SLEEPER" log line.
func pidsOf(t *testing.T, rec *sandboxtest.Recorder, id string) (agent, sleeper int) {
	evs := rec.WaitFor(id, "the pids log line", func(evs []sandbox.Event) bool {
		for _, e := range evs {
			if strings.HasPrefix(e.Message, "pids ") {
				return true
			}
		}
		return false
	})
	for _, e := range evs {
		if f := strings.Fields(e.Message); len(f) == 3 && f[0] == "pids" {
			agent, _ = strconv.Atoi(f[1])
			sleeper, _ = strconv.Atoi(f[2])
		}
	}
	if agent == 0 || sleeper == 0 {
		t.Fatalf("no pids in %+v", evs)
	}
	return agent, sleeper
}

// groupMembers lists live (non-zombie) processes whose process group is pgid.
func groupMembers(t *testing.T, pgid int) []int {
	t.Helper()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []int
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // exited while we looked
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces: cut at the last ')'.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		f := strings.Fields(s[i+1:])
		if len(f) < 3 || f[0] == "Z" {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid {
			pid, _ := strconv.Atoi(strings.Fields(s)[0])
			out = append(out, pid)
		}
	}
	return out
}

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z"
}

func checkGroupGone(t *testing.T, agent, sleeper int) {
	t.Helper()
	// SIGKILL is delivered asynchronously: on a loaded machine a killed
	// process can still be scheduled for a moment after kill() returns.
	// A process that lives on for seconds was not killed.
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end) && (alive(sleeper) || alive(agent)); {
		time.Sleep(20 * time.Millisecond)
	}
	if alive(sleeper) {
		t.Errorf("sleeper %d survived the run", sleeper)
	}
	if alive(agent) {
		t.Errorf("agent %d survived the run", agent)
	}
	if m := groupMembers(t, agent); len(m) > 0 {
		t.Errorf("process group %d still has members %v", agent, m)
	}
}

func TestHostCancelKillsProcessGroup(t *testing.T) {
	r, rec := hostRunner(t)
	info, err := r.Submit("x", "sleeper", nil)
	if err != nil {
		t.Fatal(err)
	}
	agent, sleeper := pidsOf(t, rec, info.ID)
	if m := groupMembers(t, agent); len(m) != 2 {
		t.Fatalf("before cancel, group %d has %v, want the agent and the sleeper", agent, m)
	}
	if err := r.Cancel(info.ID); err != nil {
		t.Fatal(err)
	}
	if f := rec.Final(info.ID); f.Status != sandbox.StatusCancelled {
		t.Errorf("final %s %q, want cancelled", f.Status, f.Message)
	}
	checkGroupGone(t, agent, sleeper)
}

func TestHostTimeoutKillsProcessGroup(t *testing.T) {
	r, rec := hostRunner(t)
	info, err := r.Submit("x", "slow", nil)
	if err != nil {
		t.Fatal(err)
	}
	agent, sleeper := pidsOf(t, rec, info.ID)
	f := rec.Final(info.ID)
	if f.Status != sandbox.StatusTimedOut || !strings.Contains(f.Message, "time limit of 8s") {
		t.Errorf("final %s %q, want timed-out", f.Status, f.Message)
	}
	checkGroupGone(t, agent, sleeper)
}

func TestHostAgentGarbageFailsReadably(t *testing.T) {
	r, rec := hostRunner(t)
	info, _ := r.Submit("x", "garbage", nil)
	f := rec.Final(info.ID)
	if f.Status != sandbox.StatusFailed || !strings.Contains(f.Message, `not an event: "Segmentation fault (not really)`) {
		t.Errorf("final %s %q", f.Status, f.Message)
	}
	// The events before the garbage were kept.
	if evs := rec.Events(info.ID); evs[2].Message != "about to misbehave" {
		t.Errorf("events %+v", evs)
	}
}

func TestHostAgentCrashFailsReadably(t *testing.T) {
	r, rec := hostRunner(t)
	info, _ := r.Submit("x", "crash", nil)
	f := rec.Final(info.ID)
	if f.Status != sandbox.StatusFailed || !strings.Contains(f.Message, "exit status 3") || !strings.Contains(f.Message, "lost its marbles") {
		t.Errorf("final %s %q", f.Status, f.Message)
	}
	var stderr bool
	for _, e := range rec.Events(info.ID) {
		stderr = stderr || (e.Type == sandbox.EvLog && e.Level == "stderr" && strings.Contains(e.Message, "marbles"))
	}
	if !stderr {
		t.Error("stderr line not turned into a log event")
	}
}

func TestHostEchoRunsToDone(t *testing.T) {
	r, rec := hostRunner(t)
	info, _ := r.Submit("x", "echo", map[string]any{"n": 5})
	f := rec.Final(info.ID)
	if f.Status != sandbox.StatusDone || f.Backend != "host" {
		t.Fatalf("final %+v", f)
	}
	evs := rec.Events(info.ID)
	// queued, running, 5 logs, result, done
	if len(evs) != 9 || evs[7].Type != sandbox.EvResult {
		t.Errorf("events %+v", evs)
	}
}

func TestRunnerCloseInterruptsActiveRuns(t *testing.T) {
	r, rec := hostRunner(t)
	a, _ := r.Submit("a", "sleeper", nil)
	b, _ := r.Submit("b", "echo", nil)
	agent, sleeper := pidsOf(t, rec, a.ID)
	r.Close()
	if f := rec.Final(a.ID); f.Status != sandbox.StatusInterrupted {
		t.Errorf("running run: %s", f.Status)
	}
	if f := rec.Final(b.ID); f.Status != sandbox.StatusInterrupted {
		t.Errorf("queued run: %s", f.Status)
	}
	checkGroupGone(t, agent, sleeper)
	if _, err := r.Submit("c", "echo", nil); !errors.Is(err, runner.ErrClosed) {
		t.Errorf("submit after close: %v", err)
	}
}

// An interactive run through a real agent child: the request and then each
// command travel as lines on its stdin, which stays open until "done".
func TestHostInteractiveRun(t *testing.T) {
	r, rec := hostRunner(t)
	info, err := r.Submit("ann", "counter", nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i <= 2; i++ {
		rec.WaitFor(info.ID, fmt.Sprintf("%d steps", i+1), func(evs []sandbox.Event) bool {
			n := 0
			for _, e := range evs {
				if e.Type == sandbox.EvStep {
					n++
				}
			}
			return n > i
		})
		cmd := "add"
		if i == 2 {
			cmd = "done"
		}
		if err := r.Command(info.ID, "ann", sandbox.Command{Cmd: cmd}); err != nil {
			t.Fatal(err)
		}
	}
	if f := rec.Final(info.ID); f.Status != sandbox.StatusDone {
		t.Fatalf("final %+v", f)
	}
	var last string
	for _, e := range rec.Events(info.ID) {
		if e.Type == sandbox.EvLog {
			last = e.Message
		}
	}
	if last != "done at 2" {
		t.Errorf("last log %q, want the agent's \"done at 2\"", last)
	}
}

// TestSpareNeverDoubles: runs back to back through an agent with a spare
// start one child each and keep at most one spare: the next run waits for
// the spare being started instead of starting a second child beside it.
// Two children starting at once is what stretched a timing run in the
// guest (a Go binary's start-up is a second of CPU under TCG).
func TestSpareNeverDoubles(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	starts := filepath.Join(t.TempDir(), "starts")
	// Each child start appends a line, then becomes the test agent.
	script := `echo x >> "$STARTS"; exec "$@"`
	be := &agentproc.Agent{Command: []string{"/bin/sh", "-c", script, "sh", exe, "-test.run=^$"},
		Env: []string{envTestAgent + "=1", "STARTS=" + starts}, Spare: true}
	defer be.Close()
	const runs = 12
	for i := range runs {
		var final sandbox.Event
		err := be.Exec(context.Background(), sandbox.NewSession(sandbox.Request{RunID: fmt.Sprint("r", i), Experiment: "echo", Params: sandbox.Params{"n": int64(1)}}, nil, func(ev sandbox.Event) { final = ev }))
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if final.Type != sandbox.EvResult && final.Type != sandbox.EvStatus {
			t.Fatalf("run %d ended with %+v", i, final)
		}
	}
	be.Close()
	b, _ := os.ReadFile(starts)
	// One child per run, plus the spare left after the last one (killed
	// by Close, it may not have written its line yet).
	if n := strings.Count(string(b), "x"); n < runs || n > runs+1 {
		t.Fatalf("%d children started for %d runs back to back, want %d or %d", n, runs, runs, runs+1)
	}
}
