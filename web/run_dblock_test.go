package web

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/runs/runner"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/runhub"
)

// recordSignal is the hub with a signal when a run's record starts being
// written.
type recordSignal struct {
	*runhub.Hub
	entered chan string
}

func (s recordSignal) RunCreated(info sandbox.RunInfo) error {
	s.entered <- info.Learner
	return s.Hub.RunCreated(info)
}

// While another connection holds the database's write lock, a learner's
// Submit waits for its run record; another learner's Lookup and Cancel must
// still answer at once, before that Submit is through (the runner does no
// database I/O under its lock). Afterwards every event is stored in order.
func TestRunnerAnswersWhileDatabaseLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lab.db")
	db, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	hub := runhub.New(db, slog.New(slog.NewTextHandler(io.Discard, nil)))
	sink := recordSignal{Hub: hub, entered: make(chan string, 4)}
	reg := runTestRegistry()
	rn := runner.New(runner.Config{
		Registry: reg, Sink: sink, Concurrency: 1,
		Backend: func(sandbox.Need) sandbox.Backend { return sandbox.InProcess{Registry: reg} },
	})

	learnerA, learnerB := store.NewLearnerID(), store.NewLearnerID()
	for _, l := range []string{learnerA, learnerB} {
		if err := db.EnsureLearner(context.Background(), l); err != nil {
			t.Fatal(err)
		}
	}

	// Learner b's run is running (held at its gate).
	key := int64(7_000_001)
	b, err := rn.Submit(learnerB, "hold", map[string]any{"key": key})
	if err != nil {
		t.Fatal(err)
	}
	<-sink.entered
	if b.Status != sandbox.StatusRunning {
		t.Fatalf("b: %+v", b)
	}

	// Another connection takes the write lock and keeps it.
	other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(20000)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ctx := context.Background()
	lock, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}

	// Learner a submits: the run record waits for the lock.
	type submitted struct {
		info sandbox.RunInfo
		err  error
	}
	aDone := make(chan submitted, 1)
	go func() {
		info, err := rn.Submit(learnerA, "ticks", map[string]any{"n": 3})
		aDone <- submitted{info, err}
	}()
	if who := <-sink.entered; who != learnerA {
		t.Fatalf("record of %s, want learner a", who)
	}

	// b's Lookup and Cancel answer while a's Submit is still writing.
	if info, ok := rn.Lookup(b.ID); !ok || info.Status != sandbox.StatusRunning {
		t.Errorf("Lookup(b) = %+v, %v", info, ok)
	}
	if err := rn.Cancel(b.ID); err != nil {
		t.Errorf("Cancel(b): %v", err)
	}
	select {
	case s := <-aDone:
		t.Fatalf("Lookup and Cancel answered only after a's Submit was through (%+v, %v)", s.info, s.err)
	default:
	}

	if _, err := lock.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	a := <-aDone
	if a.err != nil {
		t.Fatalf("a's Submit after the lock was released: %v", a.err)
	}
	for { // a's run finishes on its own
		if _, active := rn.Lookup(a.info.ID); !active {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	rn.Close() // waits until every event is with the hub

	for id, want := range map[string]sandbox.Status{b.ID: sandbox.StatusCancelled, a.info.ID: sandbox.StatusDone} {
		run, err := db.Run(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if sandbox.Status(run.Status) != want {
			t.Errorf("run %s stored as %s, want %s", id, run.Status, want)
		}
		evs, err := db.RunEvents(ctx, id, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for i, ev := range evs {
			if ev.Seq != int64(i+1) {
				t.Errorf("run %s: stored event %d has seq %d", id, i, ev.Seq)
			}
		}
		if len(evs) == 0 || evs[len(evs)-1].Status != want {
			t.Errorf("run %s: last stored event %+v, want status %s", id, evs[len(evs)-1:], want)
		}
	}
}
