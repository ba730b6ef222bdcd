package runhub

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	rdmalab "github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/store"
)

// newStreamingHub is a hub over a fresh database and a test server whose
// URL+RUN streams that run's events as GET /api/runs/{id}/events does
// (the run is not checked: the learner side's handler does that).
func newStreamingHub(t *testing.T) (*store.DB, *Hub, string) {
	db, hub := newHub(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := hub.Stream(w, r, strings.TrimPrefix(r.URL.Path, "/"), func() error { return nil }); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	}))
	t.Cleanup(srv.Close)
	return db, hub, srv.URL + "/"
}

// readFrames reads the `id:` lines of an event stream until it has n or
// the stream ends, and returns the data lines by seq.
func readFrames(t *testing.T, url string, n int) map[int64]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("GET %s: %d", url, res.StatusCode)
	}
	out := map[int64]string{}
	var seq int64
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() && len(out) < n {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			seq, _ = strconv.ParseInt(strings.TrimPrefix(line, "id: "), 10, 64)
		case strings.HasPrefix(line, "data: ") && seq > 0:
			if _, dup := out[seq]; dup {
				t.Errorf("event %d sent twice", seq)
			}
			out[seq] = strings.TrimPrefix(line, "data: ")
			seq = 0
		}
	}
	return out
}

// A watcher who opens a run while it streams gets its backlog from the
// hub's memory, byte for byte what was stored and sent, without a store
// read: here the database is closed before the watcher arrives, which
// failed the request before (issue 31: a class opening a shared run at
// once queued every page load behind their store reads).
func TestLateWatcherBacklogFromMemory(t *testing.T) {
	db, hub, url := newStreamingHub(t)
	id := "live-run"
	if err := hub.RunCreated(rdmalab.RunInfo{ID: id, Learner: store.NewLearnerID(), Experiment: "ticks", Status: rdmalab.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	for i := int64(1); i <= 3; i++ {
		hub.RunEvent(id, rdmalab.Event{Seq: i, Time: time.Now(), Type: rdmalab.EvLog, Message: "line " + strconv.FormatInt(i, 10),
			Messages: rdmalab.Text{"en": "line", "zh": "一行"}})
	}
	stored, err := db.RunEventsJSON(context.Background(), id, 0, 0)
	if err != nil || len(stored) != 3 {
		t.Fatalf("stored %d events, err %v", len(stored), err)
	}
	if _, frames, live := hub.subscribeAfter(id, 2); !live || len(frames) != 1 || frames[0].seq != 3 {
		t.Fatalf("after seq 2: live %v, %d frames", live, len(frames))
	}
	db.Close()
	got := readFrames(t, url+id, 3)
	for _, st := range stored {
		if got[st.Event.Seq] != string(st.Data) {
			t.Errorf("event %d: sent %q, stored %q", st.Event.Seq, got[st.Event.Seq], st.Data)
		}
	}
}

// A run that outgrows what the hub keeps in memory is read from the store
// again: every event once, in order; and a finished run is forgotten.
func TestLiveBacklogBounded(t *testing.T) {
	_, hub, url := newStreamingHub(t)
	id := "big-run"
	if err := hub.RunCreated(rdmalab.RunInfo{ID: id, Learner: store.NewLearnerID(), Experiment: "ticks", Status: rdmalab.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	line := strings.Repeat("x", 8<<10)
	n := int64(liveRunMax/len(line) + 4)
	for i := int64(1); i <= n; i++ {
		hub.RunEvent(id, rdmalab.Event{Seq: i, Time: time.Now(), Type: rdmalab.EvLog, Message: line,
			Messages: rdmalab.Text{"en": line, "zh": line}})
	}
	if _, _, live := hub.subscribeAfter(id, 0); live {
		t.Fatalf("a run of %d × 8 KiB is still held in memory (bound %d bytes)", n, liveRunMax)
	}
	hub.mu.Lock()
	held := hub.liveBytes
	hub.mu.Unlock()
	if held != 0 {
		t.Errorf("the hub still counts %d bytes for a run it gave up", held)
	}
	got := readFrames(t, url+id, int(n))
	if int64(len(got)) != n {
		t.Fatalf("got %d of %d events from the store", len(got), n)
	}
}
