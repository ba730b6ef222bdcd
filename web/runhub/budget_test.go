package runhub

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	rdmalab "github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/store"
)

// TestRunBudgetCost (issue 43): one run that spends its whole event
// budget (rdmalab.RunBytesMax in big log events, also of characters the
// lab's JSON escapes six-fold, or RunEventsMax small ones: what a guest or
// a worker may send before the run fails, as rdmalab.EventCost counts it) costs the
// lab server proportionately — its heap while the events are stored and
// streamed, the database, and the replay a browser downloads. At the old
// budget (64 MiB) one such run cost 237 MB of memory, 104 MB of database
// and a 67 MB replay.
func TestRunBudgetCost(t *testing.T) {
	const limit = 32 << 20 // each cost at most
	for _, tc := range []struct {
		name   string
		msg    string // each event's message
		events int
	}{
		{"bytes", strings.Repeat("x", 256<<10), 0},
		{"events", "x", rdmalab.RunEventsMax},
		{"escaped", strings.Repeat("<", 256<<10), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			db, err := store.Open(filepath.Join(dir, "lab.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			hub := New(db, nil)
			id := "budget-run"
			if err := db.CreateRun(context.Background(), rdmalab.RunInfo{ID: id, Learner: store.NewLearnerID(), Experiment: "ticks", Status: rdmalab.StatusRunning}); err != nil {
				t.Fatal(err)
			}
			before := dirSize(t, dir)
			var budget, n int
			grew := heapGrowth(func() {
				var batch []rdmalab.Event
				for seq := int64(1); ; seq++ {
					ev := rdmalab.Event{Seq: seq, Time: time.Now(), Type: rdmalab.EvLog, Message: tc.msg}
					// What the bound counts: the event's line as a hostile
					// agent may send it (valid JSON, nothing escaped).
					line := rdmalab.EventCost([]byte(`{"id":1,"event":{"seq":1,"type":"log","message":"` + tc.msg + `"}}`))
					if budget+line > rdmalab.RunBytesMax || n+1 > rdmalab.RunEventsMax || tc.events > 0 && n == tc.events {
						break
					}
					budget, n = budget+line, n+1
					batch = append(batch, ev)
					if len(batch) == 64 {
						hub.RunEvents(id, batch)
						batch = nil
					}
				}
				hub.RunEvents(id, append(batch, rdmalab.Event{Seq: int64(n + 1), Time: time.Now(), Type: rdmalab.EvStatus, Status: rdmalab.StatusFailed}))
			})
			db.Close()
			disk := dirSize(t, dir) - before
			db, err = store.Open(filepath.Join(dir, "lab.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			hub = New(db, nil) // a replay from the store, as after the hub forgot the run
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodGet, "/api/runs/"+id+"/events", nil)
			if err := hub.Stream(rec, req, id, func() error { return nil }); err != nil {
				t.Fatal(err)
			}
			replay, _ := io.Copy(io.Discard, rec.Body)
			t.Logf("%d events, %d MiB of budget: heap +%d MiB, database +%d MiB, replay %d MiB", n, budget>>20, grew>>20, disk>>20, replay>>20)
			for what, v := range map[string]int64{"the server's heap": int64(grew), "the database": disk, "the replay": replay} {
				if v > limit {
					t.Errorf("one run's event budget costs %s %d MiB, want at most %d MiB", what, v>>20, limit>>20)
				}
			}
		})
	}
}

// heapGrowth is how far the heap in use rose above where it was while f ran.
func heapGrowth(f func()) uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	base := m.HeapInuse
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	f()
	close(done)
	if p := peak.Load(); p > base {
		return p - base
	}
	return 0
}

// dirSize is the bytes of the files in dir (the database, its WAL).
func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if fi, err := e.Info(); err == nil {
			n += fi.Size()
		}
	}
	return n
}
