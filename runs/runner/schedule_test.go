package runner

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/sandboxtest"
)

func TestAdmit(t *testing.T) {
	a, b := "guests", "host"
	share := func(key any, slots int) schedItem { return schedItem{key: key, slots: slots} }
	timing := func(key any) schedItem { return schedItem{key: key, slots: 2, timing: true} }
	for _, c := range []struct {
		name    string
		running []schedItem
		queue   []schedItem
		limit   int
		want    []int
	}{
		{"shareable fill the slots", nil, []schedItem{share(a, 2), share(a, 2), share(a, 2)}, 8, []int{0, 1}},
		{"a full backend lets another backend's run pass", []schedItem{share(a, 1)}, []schedItem{share(a, 1), share(b, 4)}, 8, []int{1}},
		{"the global limit", nil, []schedItem{share(a, 4), share(b, 4), share(b, 4)}, 2, []int{0, 1}},
		{"timing waits for an empty machine, and nobody overtakes it", []schedItem{share(a, 2)},
			[]schedItem{timing(a), share(b, 4)}, 8, nil},
		{"timing starts alone on an empty machine", nil, []schedItem{timing(a), share(b, 4)}, 8, []int{0}},
		{"nothing starts beside a timing run", []schedItem{timing(a)}, []schedItem{share(b, 4)}, 8, nil},
		{"shareable ahead of a timing run still start", nil, []schedItem{share(a, 2), timing(a), share(a, 2)}, 8, []int{0}},
	} {
		if got := admit(c.running, c.queue, c.limit); !slices.Equal(got, c.want) {
			t.Errorf("%s: admit = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestEstimate(t *testing.T) {
	const s = time.Second
	running := []schedItem{{key: "g", slots: 2, expect: 10 * s, left: 4 * s}}
	queue := []schedItem{
		{key: "g", slots: 2, expect: 10 * s},               // a free slot: now
		{key: "g", slots: 2, expect: 20 * s, timing: true}, // after both shareable ones end: 10 s
		{key: "g", slots: 2, expect: 10 * s},               // after the timing run: 30 s
		{key: "g", slots: 2},                               // unknown length, starts beside the previous one: 30 s
		{key: "g", slots: 2, expect: 10 * s},               // waits for a run of unknown length: not known
	}
	waits, ok := estimate(running, queue, 8)
	want := []time.Duration{0, 10 * s, 30 * s, 30 * s}
	for i, w := range want {
		if !ok[i] || waits[i] != w {
			t.Errorf("run %d: wait %s (known %v), want %s", i, waits[i], ok[i], w)
		}
	}
	if ok[4] {
		t.Errorf("run 4 waits for a run nobody knows the length of, yet its wait %s is called known", waits[4])
	}
}

// schedRegistry adds a shareable and a timing variant of the gate.
func schedRegistry() *sandbox.Registry {
	reg := sandboxtest.Registry()
	for _, v := range []struct {
		id string
		sh sandbox.Sharing
	}{{"gate-share", sandbox.Shareable}, {"gate-timing", sandbox.Timing}} {
		reg.Register(&sandbox.Experiment{
			ID: v.id, Needs: sandbox.NeedHost, Sharing: v.sh, Timeout: 30 * time.Second,
			Params: []sandbox.Param{{Name: "id", Kind: sandbox.ParamInt, Min: 0, Max: 1000, Default: int64(0)}},
			Run:    reg.Get("gate").Run,
		})
	}
	return reg
}

// TestRunnerSharingClasses: shareable runs go side by side up to the
// backend's slots; a timing run waits for the machine to empty, runs
// alone, and a shareable run submitted after it does not overtake it.
func TestRunnerSharingClasses(t *testing.T) {
	r, rec := newTestRunner(t, Config{Registry: schedRegistry(), Concurrency: 8, QueueMax: 10,
		Slots: func(sandbox.Backend) int { return 2 }})
	submit := func(who, exp string) (string, func()) {
		g, open := sandboxtest.NewGate()
		info, err := r.Submit(who, exp, map[string]any{"id": g})
		if err != nil {
			t.Fatal(err)
		}
		return info.ID, open
	}
	s1, open1 := submit("ann", "gate-share")
	s2, open2 := submit("bob", "gate-share")
	rec.WaitFor(s1, "running", sandboxtest.IsRunning)
	rec.WaitFor(s2, "running", sandboxtest.IsRunning)
	tm, openT := submit("cat", "gate-timing")
	s3, open3 := submit("dan", "gate-share")
	if info, _ := r.Lookup(tm); info.Status != sandbox.StatusQueued || info.Position != 1 {
		t.Fatalf("timing run beside two shareable ones: %s at %d, want queued at 1", info.Status, info.Position)
	}
	open1()
	rec.Final(s1)
	// A slot is free, but the timing run ahead holds dan's run back.
	if info, _ := r.Lookup(s3); info.Status != sandbox.StatusQueued {
		t.Fatalf("shareable run behind a waiting timing run: %s, want queued", info.Status)
	}
	open2()
	rec.Final(s2)
	rec.WaitFor(tm, "running", sandboxtest.IsRunning)
	if info, _ := r.Lookup(s3); info.Status != sandbox.StatusQueued {
		t.Fatalf("shareable run while a timing run runs: %s, want queued", info.Status)
	}
	openT()
	rec.Final(tm)
	rec.WaitFor(s3, "running", sandboxtest.IsRunning)
	open3()
	if f := rec.Final(s3); f.Status != sandbox.StatusDone {
		t.Fatalf("last run: %s", f.Status)
	}
}

// TestRunnerWaitEstimate: once runs of an experiment have finished, a
// queued run's status carries an estimated wait played forward from them.
func TestRunnerWaitEstimate(t *testing.T) {
	r, rec := newTestRunner(t, Config{Registry: schedRegistry(), Concurrency: 1, QueueMax: 10})
	first, err := r.Submit("ann", "echo", nil)
	if err != nil {
		t.Fatal(err)
	}
	rec.Final(first.ID)
	g, open := sandboxtest.NewGate()
	busy, err := r.Submit("bob", "gate", map[string]any{"id": g})
	if err != nil {
		t.Fatal(err)
	}
	rec.WaitFor(busy.ID, "running", sandboxtest.IsRunning)
	var ids []string
	for i := range 2 {
		info, err := r.Submit(fmt.Sprint("l", i), "echo", nil)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, info.ID)
	}
	var waits []float64
	for _, id := range ids {
		// Events reach the Sink on the run's writer, just after Submit.
		evs := rec.WaitFor(id, "its first event", func(evs []sandbox.Event) bool { return len(evs) > 0 })
		if evs[0].Status != sandbox.StatusQueued {
			t.Fatalf("first event of a queued run: %+v", evs)
		}
		waits = append(waits, evs[0].Wait)
	}
	// gate has never finished: its length is taken as the average of the
	// known ones (echo's), so both waits are known, and the second is longer.
	if waits[0] <= 0 || waits[1] <= waits[0] {
		t.Fatalf("estimated waits %v: want both known, the second longer", waits)
	}
	open()
	for _, id := range ids {
		rec.Final(id)
	}
}

// TestRunnerExpectSeeded: a runner seeded with earlier runs' durations
// (Expect, from the store after a restart) tells the first queued learner
// their wait before any run has finished in this process: 40 s of the
// running gate plus nothing ahead in the queue.
func TestRunnerExpectSeeded(t *testing.T) {
	r, rec := newTestRunner(t, Config{Registry: schedRegistry(), Concurrency: 1, QueueMax: 10,
		Expect: map[string]time.Duration{"gate": 40 * time.Second, "echo": 0}})
	g, open := sandboxtest.NewGate()
	busy, err := r.Submit("bob", "gate", map[string]any{"id": g})
	if err != nil {
		t.Fatal(err)
	}
	rec.WaitFor(busy.ID, "running", sandboxtest.IsRunning)
	queued, err := r.Submit("ann", "echo", nil)
	if err != nil {
		t.Fatal(err)
	}
	evs := rec.WaitFor(queued.ID, "its first event", func(evs []sandbox.Event) bool { return len(evs) > 0 })
	if evs[0].Status != sandbox.StatusQueued || evs[0].Wait < 35 || evs[0].Wait > 40 {
		t.Fatalf("first event of the queued run: %+v; want queued with a wait of about 40 s", evs[0])
	}
	open()
	rec.Final(queued.ID)
}
