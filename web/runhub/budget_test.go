package runhub

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rdmalab "github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/internal/attackcost"
	"github.com/rdmalab/rdmalab/internal/syncbuf"
	"github.com/rdmalab/rdmalab/store"
)

// TestRunBudgetCost (issue 43): one run that spends its whole event
// budget (rdmalab.RunBytesMax in big log events, also of characters the
// lab's JSON escapes six-fold, or RunEventsMax small ones: what a guest or
// a worker may send before the run fails, as rdmalab.EventCost counts it) costs the
// lab server proportionately — its heap while the events are stored and
// streamed, the database, and the replay a browser downloads. At the old
// budget (64 MiB) one such run cost 237 MB of memory, 104 MB of database
// and a 67 MB replay. The whole process's cost is checked against issue
// 43's bounds too (attackcost), and another learner's run, its events
// sent between the budget run's, keeps every one of them.
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
			var logs syncbuf.Buffer
			hub := New(db, slog.New(slog.NewTextHandler(&logs, nil)))
			id, honestID := "budget-run", "honest-run"
			for _, r := range []string{id, honestID} {
				if err := db.CreateRun(context.Background(), rdmalab.RunInfo{ID: r, Learner: store.NewLearnerID(), Experiment: "ticks", Status: rdmalab.StatusRunning}); err != nil {
					t.Fatal(err)
				}
			}
			before := dirSize(t, dir)
			var budget, n, honest int
			every := 4 // budget events between two of the other run's
			if tc.events > 0 {
				every = 1000
			}
			meter := attackcost.WatchSelf(logs.Len)
			func() {
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
					if n%every == 0 { // the other run's events, between these
						honest++
						hub.RunEvents(honestID, []rdmalab.Event{{Seq: int64(honest), Time: time.Now(), Type: rdmalab.EvLog, Message: "honest"}})
					}
				}
				hub.RunEvents(id, append(batch, rdmalab.Event{Seq: int64(n + 1), Time: time.Now(), Type: rdmalab.EvStatus, Status: rdmalab.StatusFailed}))
				hub.RunEvents(honestID, []rdmalab.Event{{Seq: int64(honest + 1), Time: time.Now(), Type: rdmalab.EvStatus, Status: rdmalab.StatusDone}})
			}()
			cost := meter.Stop()
			cost.Check(t, "fall 10 one run's whole event budget ("+tc.name+")")
			grew := cost.HeapGrowth
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
			rec = httptest.NewRecorder()
			if err := hub.Stream(rec, httptest.NewRequest(http.MethodGet, "/api/runs/"+honestID+"/events", nil), honestID, func() error { return nil }); err != nil {
				t.Fatal(err)
			}
			if got := strings.Count(rec.Body.String(), `"message":"honest"`); got != honest || !strings.Contains(rec.Body.String(), `"status":"done"`) {
				t.Errorf("the other learner's run kept %d of its %d events sent meanwhile (done: %v)", got, honest, strings.Contains(rec.Body.String(), `"status":"done"`))
			}
			t.Logf("%d events, %d MiB of budget: heap +%d MiB, database +%d MiB, replay %d MiB; the other run's %d events meanwhile kept", n, budget>>20, grew>>20, disk>>20, replay>>20, honest)
			for what, v := range map[string]int64{"the server's heap": int64(grew), "the database": disk, "the replay": replay} {
				if v > limit {
					t.Errorf("one run's event budget costs %s %d MiB, want at most %d MiB", what, v>>20, limit>>20)
				}
			}
		})
	}
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
