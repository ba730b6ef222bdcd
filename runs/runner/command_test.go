package runner

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/sandboxtest"
)

// steps returns the Message of each step event and each command event.
func steps(evs []sandbox.Event) []string {
	var out []string
	for _, e := range evs {
		switch e.Type {
		case sandbox.EvCommand:
			out = append(out, "cmd:"+e.Name)
		case sandbox.EvStep:
			out = append(out, e.Name+":"+e.Message)
		}
	}
	return out
}

func waitSteps(t *testing.T, rec *sandboxtest.Recorder, id string, n int) []sandbox.Event {
	t.Helper()
	return rec.WaitFor(id, fmt.Sprintf("%d step events", n), func(evs []sandbox.Event) bool {
		c := 0
		for _, e := range evs {
			if e.Type == sandbox.EvStep {
				c++
			}
		}
		return c >= n
	})
}

// TestInteractiveRun drives an interactive run through the runner and the
// agent code (in process; agentproc's tests do it with a real child):
// commands travel as lines on its stdin, each is stored before the answer,
// a foreign learner and an undeclared command are refused, and "done" ends
// the run.
func TestInteractiveRun(t *testing.T) {
	r, rec := newTestRunner(t, Config{})
	info, err := r.Submit("ann", "counter", nil)
	if err != nil {
		t.Fatal(err)
	}
	waitSteps(t, rec, info.ID, 1)
	if err := r.Command(info.ID, "bob", sandbox.Command{Cmd: "add"}); !errors.Is(err, ErrUnknownRun) {
		t.Errorf("another learner's command: %v", err)
	}
	var ce *sandbox.CommandError
	if err := r.Command(info.ID, "ann", sandbox.Command{Cmd: "rm"}); !errors.As(err, &ce) {
		t.Errorf("undeclared command: %v", err)
	}
	for i := 1; i <= 3; i++ {
		if err := r.Command(info.ID, "ann", sandbox.Command{Cmd: "add"}); err != nil {
			t.Fatal(err)
		}
		waitSteps(t, rec, info.ID, 1+i)
	}
	if err := r.Command(info.ID, "ann", sandbox.Command{Cmd: "done"}); err != nil {
		t.Fatal(err)
	}
	if f := rec.Final(info.ID); f.Status != sandbox.StatusDone {
		t.Fatalf("final %+v", f)
	}
	got := strings.Join(steps(rec.Events(info.ID)), " ")
	if got != "start: cmd:add add:n=1 cmd:add add:n=2 cmd:add add:n=3 cmd:done" {
		t.Errorf("steps %q", got)
	}
	if err := r.Command(info.ID, "ann", sandbox.Command{Cmd: "add"}); !errors.Is(err, ErrUnknownRun) {
		t.Errorf("command after the end: %v", err)
	}
}

// TestInteractiveIdle: a run nobody drives is told there are no more
// commands (its stdin ends), cleans up, and ends timed-out.
func TestInteractiveIdle(t *testing.T) {
	r, rec := newTestRunner(t, Config{})
	info, err := r.Submit("ann", "counter", nil)
	if err != nil {
		t.Fatal(err)
	}
	waitSteps(t, rec, info.ID, 1)
	if err := r.Command(info.ID, "ann", sandbox.Command{Cmd: "add"}); err != nil {
		t.Fatal(err)
	}
	f := rec.Final(info.ID)
	if f.Status != sandbox.StatusTimedOut || !strings.Contains(f.Message, "no command for") {
		t.Fatalf("final %+v", f)
	}
	var closed bool
	for _, e := range rec.Events(info.ID) {
		if e.Message == "stream closed at 1" {
			closed = true
		}
	}
	if !closed {
		t.Errorf("the experiment did not see its command stream close: %v", steps(rec.Events(info.ID)))
	}
}

func TestCommandToNonInteractiveRun(t *testing.T) {
	r, rec := newTestRunner(t, Config{})
	id, open := sandboxtest.NewGate()
	defer open()
	info, _ := r.Submit("ann", "gate", map[string]any{"id": id})
	rec.WaitFor(info.ID, "running", sandboxtest.IsRunning)
	if err := r.Command(info.ID, "ann", sandbox.Command{Cmd: "next"}); !errors.Is(err, sandbox.ErrNotInteractive) {
		t.Errorf("command to gate: %v", err)
	}
	_ = r.Cancel(info.ID)
	rec.Final(info.ID)
}

// TestInteractiveContended (issue 28 fall 6): learner ann starts an
// interactive run and sends nothing; bob's run waits for its place. The
// wait bob is told counts ann's run at what it may still take while others
// wait (not the average of short runs), and ann's run ends after
// ContendedIdle without a command, long before its own idle limit; then
// bob's run starts and finishes.
func TestInteractiveContended(t *testing.T) {
	reg := sandboxtest.Registry()
	slow := *reg.Get("counter")
	slow.ID, slow.Idle = "counter-slow", time.Hour
	reg.Register(&slow)
	r, rec := newTestRunner(t, Config{Registry: reg, ContendedIdle: 200 * time.Millisecond, ContendedRun: 10 * time.Minute})
	// A finished run teaches the runner that runs here are short.
	quick, _ := r.Submit("cy", "counter", nil)
	waitSteps(t, rec, quick.ID, 1)
	_ = r.Command(quick.ID, "cy", sandbox.Command{Cmd: "done"})
	rec.Final(quick.ID)

	ann, err := r.Submit("ann", "counter-slow", nil)
	if err != nil {
		t.Fatal(err)
	}
	waitSteps(t, rec, ann.ID, 1)
	// Nobody waits: the run is not ended for being idle a while.
	time.Sleep(500 * time.Millisecond)
	if err := r.Command(ann.ID, "ann", sandbox.Command{Cmd: "add"}); err != nil {
		t.Fatalf("an idle interactive run nobody waits for was ended: %v", err)
	}
	id, open := sandboxtest.NewGate()
	bob, err := r.Submit("bob", "gate", map[string]any{"id": id})
	if err != nil {
		t.Fatal(err)
	}
	evs := rec.WaitFor(bob.ID, "queued", func(evs []sandbox.Event) bool {
		for _, e := range evs {
			if e.Status == sandbox.StatusQueued {
				return true
			}
		}
		return false
	})
	var wait float64
	for _, e := range evs {
		if e.Status == sandbox.StatusQueued {
			wait = e.Wait
		}
	}
	if wait < (9 * time.Minute).Seconds() {
		t.Errorf("bob is told %.0f s of wait behind an interactive run that may hold the place 10 min", wait)
	}
	f := rec.Final(ann.ID)
	if f.Status != sandbox.StatusTimedOut || !strings.Contains(f.Message, "while others waited") {
		t.Errorf("ann's idle run: %s %q, want timed out for holding the place while others waited", f.Status, f.Message)
	}
	rec.WaitFor(bob.ID, "running", sandboxtest.IsRunning)
	open()
	if f := rec.Final(bob.ID); f.Status != sandbox.StatusDone {
		t.Errorf("bob's run: %s %q", f.Status, f.Message)
	}
}
