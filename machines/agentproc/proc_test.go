package agentproc_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/machines/agentproc"
	"github.com/rdmalab/rdmalab/sandbox"
)

// An endless stderr line (no newline for 256 MiB) costs the reader a fixed
// buffer: memory allocated while reading it stays far below its length,
// the budget passes on 16 KiB and counts the rest as dropped.
func TestEndlessStderrLineDoesNotGrowMemory(t *testing.T) {
	const n = 256 << 20
	p, err := agentproc.Start(agentproc.Spec{Argv: []string{"sh", "-c", "head -c 268435456 /dev/zero >&2; echo >&2; echo last words >&2"}, Group: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.CloseInput()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	passed := 0
	res := p.Watch(context.Background(), agentproc.Output{Stderr: func(line string) { passed += len(line) }})
	runtime.ReadMemStats(&after)
	if res.Exit != nil {
		t.Fatalf("child: %v", res.Exit)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("read %d MiB of stderr on one line, allocated %d KiB, dropped %d bytes", n>>20, alloc>>10, res.Dropped)
	if alloc > 8<<20 {
		t.Errorf("reading a %d MiB stderr line allocated %d MiB", n>>20, alloc>>20)
	}
	if passed > agentproc.DefaultMaxStderr {
		t.Errorf("passed on %d stderr bytes, budget %d", passed, agentproc.DefaultMaxStderr)
	}
	if res.Dropped+passed < n {
		t.Errorf("dropped %d + passed %d bytes, want at least %d", res.Dropped, passed, n)
	}
	if res.Last != "last words" {
		t.Errorf("last line %q", res.Last)
	}
}

// Through the agent: the run still finishes, and says how much it dropped.
func TestAgentEndlessStderrLine(t *testing.T) {
	r, rec := hostRunner(t)
	info, err := r.Submit("x", "stderr-flood", nil)
	if err != nil {
		t.Fatal(err)
	}
	f := rec.Final(info.ID)
	if f.Status != sandbox.StatusDone {
		t.Fatalf("final %s %q", f.Status, f.Message)
	}
	var warned bool
	for _, e := range rec.Events(info.ID) {
		warned = warned || (e.Level == "warn" && strings.Contains(e.Message, "bytes of agent stderr were dropped"))
	}
	if !warned {
		t.Errorf("no dropped-bytes warning in %d events", len(rec.Events(info.ID)))
	}
}

// Describe words an exit the way failure reasons quote it.
func TestDescribe(t *testing.T) {
	p, err := agentproc.Start(agentproc.Spec{Argv: []string{"sh", "-c", "exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if got := agentproc.Describe(p.ExitError()); got != "exit status 3" {
		t.Errorf("Describe = %q", got)
	}
	q, err := agentproc.Start(agentproc.Spec{Argv: []string{"sleep", "60"}, Group: true})
	if err != nil {
		t.Fatal(err)
	}
	q.Kill()
	if got := agentproc.Describe(q.ExitError()); got != "killed by signal SIGKILL" {
		t.Errorf("Describe = %q", got)
	}
	q.Close()
}

// A child started with Nice runs, and starts its own children, that much
// below us; without it, at our priority. (A child it forks in its first
// microseconds, before Start sets it, would keep ours: an agent forks
// only once it has read its request.)
func TestStartNice(t *testing.T) {
	niceOf := func(pid int) int {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		// The fields after the command's closing parenthesis; nice is field 19.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
		n, err := strconv.Atoi(f[16])
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	own := niceOf(os.Getpid())
	for _, nice := range []int{0, 7} {
		// As an agent, it starts its children once it has its request.
		p, err := agentproc.Start(agentproc.Spec{Argv: []string{"sh", "-c", "read req; sleep 30 & echo $!; wait"}, Group: true, Nice: nice})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Send("run"); err != nil {
			t.Fatal(err)
		}
		var child int
		if _, err := fmt.Fscan(p.Stdout(), &child); err != nil {
			t.Fatal(err)
		}
		want := min(own+nice, 19)
		if got := niceOf(p.Pid()); got != want {
			t.Errorf("Nice %d: the child runs at nice %d, want %d", nice, got, want)
		}
		if got := niceOf(child); got != want {
			t.Errorf("Nice %d: its child runs at nice %d, want %d", nice, got, want)
		}
		p.Kill()
		<-p.Exited()
	}
}
