package web

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/internal/attackcost"
	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/runs/runner"
	"github.com/rdmalab/rdmalab/sandbox"
)

// machinePrograms runs programs as the lab server's adapter does
// (cmd/labserver webTerminals.RunProgram): a learner without a machine
// gets one through the terminals' Attach, queue and all, and keeps it.
type machinePrograms struct{ f *fakeTerms }

func (m machinePrograms) RunProgram(ctx context.Context, learner string, _ rdmalab.Program, _ string, _ func(sandbox.Event)) (rdmalab.ProgramEnd, error) {
	a, err := m.f.Attach(ctx, learner, 24, 80, func(rdmalab.TermQueue) {})
	if err != nil {
		return rdmalab.ProgramEnd{}, err
	}
	a.Detach()
	return rdmalab.ProgramEnd{Stage: "check", Passed: true}, nil
}

// TestProgramRunsShareTerminalBounds is issue 43, fall 3: a program run
// attached the learner's machine past the terminal's per-address bound,
// so 6 cookies from one address running programs held both machines and
// all 4 queue places, and an honest learner elsewhere was told the queue
// was full. Now a program run passes the terminal's admission (one path
// for every way a learner gets a machine): the address's learners past
// its share are refused 429, and the learner elsewhere gets a shell.
func TestProgramRunsShareTerminalBounds(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	course, err := lessons.Load(lessons.Builtin, lessons.Options{})
	if err != nil {
		t.Fatal(err)
	}
	env.Course.Store(course)
	fake := &fakeTerms{max: 2, queueMax: 4, sessions: map[string]*fakeShell{}}
	env.Server.cfg.Terminals = fake
	env.Server.cfg.Programs = machinePrograms{fake}
	p := course.Lesson("04-first-program").Programs[0]
	const attacker, victim = "203.0.113.9", "198.51.100.7"
	var codes []int
	cost := attackcost.WatchSelf(func() int64 { return int64(env.Logs.Len()) })
	for range 6 {
		c := learnerFrom(t, env, attacker)
		req, _ := http.NewRequest("POST", env.HTTP.URL+"/api/lessons/04-first-program/programs/"+p.ID+"/run",
			strings.NewReader(`{"source":"int main(void){return 0;}"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Real-IP", attacker)
		req.Header.Set("Origin", env.HTTP.URL)
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		codes = append(codes, res.StatusCode)
	}
	t.Logf("six cookies from one address running programs: %v", codes)
	if codes[0] != http.StatusCreated {
		t.Errorf("the address's first learner's run: %d, want 201", codes[0])
	}
	for i, c := range codes[1:] {
		if c != http.StatusTooManyRequests {
			t.Errorf("the address's learner %d's run: %d, want 429 (past the address's share of machines)", i+2, c)
		}
	}
	ws, said := termDial(t, env, learnerFrom(t, env, victim), victim)
	defer ws.CloseNow()
	cost.Stop().Check(t, "fall 3 program runs past the terminal bound (in-process, fake terminals)")
	if said != "shell" {
		t.Errorf("the learner elsewhere: %q, want a shell", said)
	}
}
