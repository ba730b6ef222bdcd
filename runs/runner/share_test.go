package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/sandboxtest"
)

func hasShared(evs []sandbox.Event) bool {
	return len(evs) > 0 && evs[0].Type == sandbox.EvLog && evs[0].Name == "shared"
}

// TestRunnerSharesSameRequests: requests with the same experiment and
// parameters as a queued or just-started run join it (own id and record,
// a copy of its events from the first, a line saying so); a different
// request, a learner whose last run was shared, and any request once
// sharing is off run their own; leaving a shared run, as a watcher or as
// the one who started it, ends only one's own record.
func TestRunnerSharesSameRequests(t *testing.T) {
	r, rec := newTestRunner(t, Config{Share: time.Minute})
	g, open := sandboxtest.NewGate()
	host, err := r.Submit("ann", "gate", map[string]any{"id": g})
	if err != nil {
		t.Fatal(err)
	}
	rec.WaitFor(host.ID, "the phase", func(evs []sandbox.Event) bool { return sandboxtest.HasPhase(evs, "waiting") })
	var joined []sandbox.RunInfo
	for _, l := range []string{"bob", "cy"} {
		info, err := r.Submit(l, "gate", map[string]any{"id": g})
		if err != nil {
			t.Fatal(err)
		}
		if info.ID == host.ID || info.Status != sandbox.StatusRunning {
			t.Fatalf("%s: %+v, want a running run of their own", l, info)
		}
		joined = append(joined, info)
	}
	g2, open2 := sandboxtest.NewGate()
	other, err := r.Submit("dee", "gate", map[string]any{"id": g2})
	if err != nil {
		t.Fatal(err)
	}
	if other.Status != sandbox.StatusQueued {
		t.Fatalf("different parameters: %+v, want queued behind the gate", other)
	}
	for i, j := range joined {
		evs := rec.WaitFor(j.ID, "the shared run's events", func(evs []sandbox.Event) bool { return sandboxtest.HasPhase(evs, "waiting") })
		if !hasShared(evs) {
			t.Fatalf("joined run %d does not start with the shared line: %+v", i, evs)
		}
		if want := []string{"1 classmate", "2 classmates"}[i]; !strings.Contains(evs[0].Message, want) || evs[0].Messages["zh"] == "" {
			t.Errorf("joined run %d: %q, want %q and a zh line", i, evs[0].Message, want)
		}
	}
	if err := r.Cancel(joined[0].ID); err != nil {
		t.Fatal(err)
	}
	if f := rec.Final(joined[0].ID); f.Status != sandbox.StatusCancelled {
		t.Fatalf("bob left: %s", f.Status)
	}
	if info, ok := r.Lookup(host.ID); !ok || info.Status != sandbox.StatusRunning {
		t.Fatalf("the shared run after a watcher left: %+v %v", info, ok)
	}
	open()
	if f := rec.Final(host.ID); f.Status != sandbox.StatusDone {
		t.Fatalf("host: %s", f.Status)
	}
	if f := rec.Final(joined[1].ID); f.Status != sandbox.StatusDone {
		t.Fatalf("cy: %s", f.Status)
	}

	// dee's run starts now; cy's last run was shared, so cy runs her own
	// even with dee's parameters; eve joins dee's.
	rec.WaitFor(other.ID, "the phase", func(evs []sandbox.Event) bool { return sandboxtest.HasPhase(evs, "waiting") })
	own, err := r.Submit("cy", "gate", map[string]any{"id": g2})
	if err != nil {
		t.Fatal(err)
	}
	if own.Status != sandbox.StatusQueued {
		t.Fatalf("cy again after a shared run: %+v, want her own (queued)", own)
	}
	eve, err := r.Submit("eve", "gate", map[string]any{"id": g2})
	if err != nil {
		t.Fatal(err)
	}
	// dee, who started it, leaves: her record ends, eve's run goes on.
	if err := r.Cancel(other.ID); err != nil {
		t.Fatal(err)
	}
	if f := rec.Final(other.ID); f.Status != sandbox.StatusCancelled {
		t.Fatalf("dee left: %s", f.Status)
	}
	if info, ok := r.Lookup(eve.ID); !ok || info.Status != sandbox.StatusRunning {
		t.Fatalf("eve's run after dee left: %+v %v", info, ok)
	}
	open2()
	if f := rec.Final(eve.ID); f.Status != sandbox.StatusDone {
		t.Fatalf("eve: %s", f.Status)
	}
	if f := rec.Final(own.ID); f.Status != sandbox.StatusDone {
		t.Fatalf("cy's own: %s", f.Status)
	}
	if evs := rec.Events(own.ID); hasShared(evs) {
		t.Error("cy's own run says it is shared")
	}
}

// TestRunnerShareOffAndInteractive: without Share every request runs its
// own; interactive runs are never shared.
func TestRunnerShareOffAndInteractive(t *testing.T) {
	r, _ := newTestRunner(t, Config{})
	g, open := sandboxtest.NewGate()
	defer open()
	if _, err := r.Submit("ann", "gate", map[string]any{"id": g}); err != nil {
		t.Fatal(err)
	}
	if info, err := r.Submit("bob", "gate", map[string]any{"id": g}); err != nil || info.Status != sandbox.StatusQueued {
		t.Fatalf("share off: %+v %v, want queued", info, err)
	}
	r2, _ := newTestRunner(t, Config{Share: time.Minute, Concurrency: 2})
	a, err := r2.Submit("ann", "counter", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := r2.Submit("bob", "counter", nil)
	if err != nil {
		t.Fatal(err)
	}
	r2.mu.Lock()
	shared := r2.runs[b.ID].host != nil
	r2.mu.Unlock()
	if shared || a.ID == b.ID {
		t.Error("an interactive run was shared")
	}
}
