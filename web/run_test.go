package web

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/testwait"
	"github.com/rdmalab/rdmalab/runs/runner"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/page"
)

func TestExperimentsAPI(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	res := env.get(env.client(), "/api/experiments")
	defer res.Body.Close()
	var body struct {
		Experiments []struct {
			ID             string          `json:"id"`
			Title          sandbox.Text    `json:"title"`
			Needs          string          `json:"needs"`
			Params         []sandbox.Param `json:"params"`
			Presets        []sandbox.Preset
			TimeoutSeconds float64 `json:"timeout_seconds"`
		} `json:"experiments"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	var tcp bool
	for _, e := range body.Experiments {
		if e.ID == "tcp-cost" {
			tcp = true
			if e.Needs != "host" || len(e.Params) != 2 || e.Params[1].Name != "msg_size" || e.Params[1].Min != 64 ||
				e.Params[1].Max != 1<<20 || len(e.Presets) == 0 || e.Title["zh"] == "" || e.TimeoutSeconds != 30 {
				t.Errorf("tcp-cost: %+v", e)
			}
		}
	}
	if !tcp {
		t.Errorf("tcp-cost missing from %+v", body)
	}
}

func TestRunCreateRefusals(t *testing.T) {
	env := newRunEnv(t, runner.Config{Concurrency: 1, QueueMax: 1})
	c := env.client()
	var e page.ErrorBody
	res := env.postJSON(c, "/api/runs", `{"experiment":"ticks","params":{"size":"2MiB"}}`, &e)
	// In the learner's language (zh by default): the bounds too, no English inside.
	if m := e.Error.Message; res.StatusCode != 400 || !strings.Contains(m, "size") || !strings.Contains(m, "64 B 到 1 MiB") || strings.Contains(m, "must") {
		t.Errorf("param out of range: %d %+v", res.StatusCode, e)
	}
	res = env.postJSON(c, "/api/runs", `{"experiment":"ticks","params":{"rm":1}}`, &e)
	if res.StatusCode != 400 || !strings.Contains(e.Error.Message, "rm") {
		t.Errorf("unknown param: %d %+v", res.StatusCode, e)
	}
	res = env.postJSON(c, "/api/runs", `{"experiment":"nope"}`, &e)
	if res.StatusCode != 400 || e.Error.Code != page.CodeBadRequest {
		t.Errorf("unknown experiment: %d %+v", res.StatusCode, e)
	}
	res = env.postJSON(c, "/api/runs", `not json`, &e)
	if res.StatusCode != 400 {
		t.Errorf("bad body: %d", res.StatusCode)
	}

	key := time.Now().UnixNano() % (1 << 40)
	first := env.submit(c, "hold", map[string]any{"key": key})
	defer close(gate(key))
	res = env.postJSON(c, "/api/runs?lang=en", `{"experiment":"ticks"}`, &e)
	if res.StatusCode != 409 || e.Error.Code != page.CodeConflict || !strings.Contains(e.Error.Message, "wait for it") {
		t.Errorf("second run of one learner: %d %+v", res.StatusCode, e)
	}
	env.submit(env.client(), "ticks", nil) // waits behind the held run: the queue is now full
	res = env.postJSON(env.client(), "/api/runs?lang=en", `{"experiment":"ticks"}`, &e)
	if res.StatusCode != 429 || e.Error.Code != page.CodeBusy || res.Header.Get("Retry-After") != "60" ||
		!strings.Contains(e.Error.Message, "try again in a minute") {
		t.Errorf("queue full: %d %+v", res.StatusCode, e)
	}
	var st runJSON
	r := env.get(c, "/api/runs/"+first)
	json.NewDecoder(r.Body).Decode(&st)
	r.Body.Close()
	if st.Status != sandbox.StatusRunning || !st.Mine || st.Backend != "host" {
		t.Errorf("the held run: %+v", st)
	}
}

func TestRunStreamsAndReplays(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	c := env.client()
	id := env.submit(c, "tcp-cost", map[string]any{"seconds": 1, "msg_size": 4096})
	evs, ended := env.stream(c, id).events(t)
	if !ended {
		t.Fatal("stream did not end with event: end")
	}
	checkSeq(t, evs, 1)
	last := evs[len(evs)-1]
	if last.Type != sandbox.EvStatus || last.Status != sandbox.StatusDone {
		t.Fatalf("last event %+v", last)
	}
	types := map[sandbox.EventType]int{}
	var result sandbox.Event
	for _, ev := range evs {
		types[ev.Type]++
		if ev.Type == sandbox.EvResult {
			result = ev
		}
	}
	if types[sandbox.EvMetric] < 3 || types[sandbox.EvTable] != 1 || types[sandbox.EvPhase] < 2 || result.Figures["gbps"] <= 0 {
		t.Errorf("event types %v, result %+v", types, result)
	}

	// The replay is exactly what was streamed.
	again, _ := env.stream(env.client(), id).events(t)
	if len(again) != len(evs) {
		t.Fatalf("replay has %d events, live had %d", len(again), len(evs))
	}
	for i := range evs {
		a, _ := json.Marshal(evs[i])
		b, _ := json.Marshal(again[i])
		if string(a) != string(b) {
			t.Fatalf("event %d differs:\n%s\n%s", i, a, b)
		}
	}

	var st runJSON
	r := env.get(c, "/api/runs/"+id)
	json.NewDecoder(r.Body).Decode(&st)
	r.Body.Close()
	if st.Status != sandbox.StatusDone || st.Result == nil || st.Started == nil || st.Finished == nil || st.Backend != "host" {
		t.Errorf("run %+v", st)
	}

	// The run page renders the stored run without JavaScript.
	doc := env.doc(c, "/runs/"+id+"?lang=en", 200)
	if got := doc.Find("[data-testid=run-status]").Text(); !strings.Contains(got, "Done") {
		t.Errorf("status %q", got)
	}
	if doc.Find("[data-testid=run-verdict]").Length() != 1 || doc.Find("[data-testid=run-table]").Length() != 1 ||
		doc.Find("[data-testid=run-metrics] tbody tr").Length() != 3 {
		t.Errorf("run page lacks verdict, table or metrics")
	}
	if b := doc.Find("[data-testid=run-backend]"); !strings.Contains(b.Text(), "real measurements of this machine") {
		t.Errorf("backend note %q", b.Text())
	}
	if doc.Find("[data-testid=run-refresh]").Length() != 0 {
		t.Error("a finished run page still refreshes")
	}
	list := env.doc(c, "/runs?lang=zh", 200)
	if list.Find("[data-testid=run-row]").Length() != 1 || !strings.Contains(list.Find("[data-testid=run-row]").Text(), "完成") {
		t.Errorf("history: %q", list.Find("[data-testid=run-list]").Text())
	}
	if env.doc(env.client(), "/runs", 200).Find("[data-testid=run-row]").Length() != 0 {
		t.Error("another learner sees this learner's runs")
	}
}

func TestSSEResumeFromLastEventID(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	c := env.client()
	key := time.Now().UnixNano()%(1<<40) + 1
	id := env.submit(c, "hold", map[string]any{"key": key, "before": 3, "after": 4})

	// Live: read queued, running and the three "before" logs, then drop.
	s := env.stream(c, id)
	var got []sandbox.Event
	for len(got) < 5 {
		m, err := s.next()
		if err != nil {
			t.Fatal(err)
		}
		if m.Data != "" {
			var ev sandbox.Event
			json.Unmarshal([]byte(m.Data), &ev)
			got = append(got, ev)
		}
	}
	s.res.Body.Close()
	checkSeq(t, got, 1)
	if got[4].Message != "before 2" {
		t.Fatalf("fifth event %+v", got[4])
	}
	close(gate(key)) // the run goes on with nobody watching
	waitFinal(t, env, id)

	// Reconnect as EventSource does: the rest, no repeats, then end.
	rest, ended := env.stream(c, id, "Last-Event-ID", "5").events(t)
	if !ended {
		t.Error("no end after resume")
	}
	checkSeq(t, rest, 6)
	if len(rest) != 5 || rest[0].Message != "after 0" || rest[4].Status != sandbox.StatusDone {
		t.Errorf("resumed events %+v", rest)
	}
	// ?after= does the same for a page that rendered some events already.
	res := env.get(c, "/api/runs/"+id+"/events?after=9")
	tail, _ := (&sseReader{br: bufio.NewReader(res.Body), res: res}).events(t)
	checkSeq(t, tail, 10)
	if len(tail) != 1 {
		t.Errorf("after=9: %+v", tail)
	}
}

func TestSSEHeartbeatAndLiveDelivery(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	env.Hub.Heartbeat = 30 * time.Millisecond
	c := env.client()
	key := time.Now().UnixNano()%(1<<40) + 2
	id := env.submit(c, "hold", map[string]any{"key": key, "before": 0, "after": 1})
	s := env.stream(c, id)
	res := s.res
	if res.Header.Get("Content-Type") != "text/event-stream; charset=utf-8" || res.Header.Get("Cache-Control") != "no-store" ||
		res.Header.Get("X-Accel-Buffering") != "no" {
		t.Errorf("headers %v", res.Header)
	}
	pings := 0
	deadline := time.Now().Add(10 * time.Second)
	for pings < 2 && time.Now().Before(deadline) {
		m, err := s.next()
		if err != nil {
			t.Fatal(err)
		}
		if m.Comment == "ping" {
			pings++
		}
	}
	if pings < 2 {
		t.Fatal("no heartbeats on an idle stream")
	}
	close(gate(key))
	evs, ended := s.events(t)
	if !ended || len(evs) != 2 || evs[0].Message != "after 0" || evs[1].Status != sandbox.StatusDone {
		t.Errorf("live after heartbeats: %+v ended=%v", evs, ended)
	}
}

func waitFinal(t *testing.T, env *runEnv, id string) {
	t.Helper()
	if !testwait.For(20*time.Second, 10*time.Millisecond, func() bool {
		r, err := env.DB.Run(t.Context(), id)
		return err == nil && r.Status.Final()
	}) {
		t.Fatalf("run %s did not finish", id)
	}
}

func TestCancelOnlyByOwner(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	owner := env.client()
	key := time.Now().UnixNano()%(1<<40) + 3
	id := env.submit(owner, "hold", map[string]any{"key": key})
	var e page.ErrorBody
	if res := env.postJSON(env.client(), "/api/runs/"+id+"/cancel", "", &e); res.StatusCode != 403 {
		t.Errorf("stranger cancel: %d %+v", res.StatusCode, e)
	}
	if res := env.postJSON(owner, "/api/runs/"+id+"/cancel", "", nil); res.StatusCode != 202 {
		t.Errorf("owner cancel: %d", res.StatusCode)
	}
	evs, _ := env.stream(owner, id).events(t)
	if last := evs[len(evs)-1]; last.Status != sandbox.StatusCancelled {
		t.Errorf("final %+v", last)
	}
	if res := env.postJSON(owner, "/api/runs/"+id+"/cancel", "", &e); res.StatusCode != 409 {
		t.Errorf("cancel of a finished run: %d", res.StatusCode)
	}
	if res := env.postJSON(owner, "/api/runs/nope/cancel", "", &e); res.StatusCode != 404 {
		t.Errorf("cancel of no run: %d", res.StatusCode)
	}
}

func TestRunFormWithoutJavaScript(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	c := env.client()
	// The lesson page shows the widget with the directive's values.
	doc := env.doc(c, "/lessons/01-one?lang=en", 200)
	w := doc.Find("[data-testid=experiment][data-experiment=memlock]")
	if w.Length() != 1 || w.Find("[data-testid=experiment-form]").Length() != 1 || w.Find("[data-testid=preset]").Length() != 3 {
		t.Fatalf("memlock widget: %q", w.Text())
	}
	// The directive's limit=65536 is selected; the other fields show defaults.
	if v, _ := w.Find("select[name=limit] option[selected]").Attr("value"); v != "65536" {
		t.Errorf("limit preset from the directive: %q", v)
	}
	if v, _ := w.Find("input[name=size]").Attr("value"); v != "1048576" {
		t.Errorf("size default: %q", v)
	}

	key := time.Now().UnixNano()%(1<<40) + 4
	form := url.Values{"experiment": {"hold"}, "key": {fmt.Sprint(key)}, "before": {"1"}}
	res, err := c.PostForm(env.HTTP.URL+"/runs", form)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	loc := res.Header.Get("Location")
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/runs/") {
		t.Fatalf("form post: %d %q", res.StatusCode, loc)
	}
	page := env.doc(c, loc+"?lang=en", 200)
	if page.Find("noscript meta[http-equiv=refresh]").Length() != 1 && !strings.Contains(page.Find("noscript").Text(), "refresh") {
		t.Error("a running run's page does not refresh without JS")
	}
	if page.Find("[data-testid=cancel-form]").Length() != 1 {
		t.Error("no cancel button for the owner")
	}
	res, _ = c.PostForm(env.HTTP.URL+loc+"/cancel", nil)
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Errorf("form cancel: %d", res.StatusCode)
	}
	waitFinal(t, env, strings.TrimPrefix(loc, "/runs/"))
	page = env.doc(c, loc+"?lang=zh", 200)
	if got := page.Find("[data-testid=run-status]").Text(); !strings.Contains(got, "已取消") {
		t.Errorf("status after cancel %q", got)
	}

	// A preset button posts the preset; a bad value re-renders a refusal naming the param.
	res, _ = c.PostForm(env.HTTP.URL+"/runs", url.Values{"experiment": {"ticks"}, "preset": {"many"}})
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Errorf("preset post: %d", res.StatusCode)
	}
	waitFinal(t, env, strings.TrimPrefix(res.Header.Get("Location"), "/runs/"))
	res, _ = c.PostForm(env.HTTP.URL+"/runs?lang=en", url.Values{"experiment": {"ticks"}, "n": {"9999"}})
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 400 || !strings.Contains(string(body), "between 1 and 500") {
		t.Errorf("bad form value: %d %s", res.StatusCode, body)
	}
}

// TestRunPagesHaveNoMissingStrings renders every sandbox page in both
// languages and looks for UI keys that have no text.
func TestRunPagesHaveNoMissingStrings(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	c := env.client()
	id := env.submit(c, "ticks", map[string]any{"n": 3})
	waitFinal(t, env, id)
	for _, lang := range []string{"zh", "en"} {
		for _, path := range []string{"/lessons/01-one", "/runs/" + id, "/runs"} {
			text := env.doc(c, path+"?lang="+lang, 200).Find("main").Text()
			if i := strings.Index(text, "run."); i >= 0 {
				t.Errorf("%s in %s shows a raw key: %q", path, lang, text[i:min(len(text), i+30)])
			}
		}
	}
}

// lagRunner is a runner whose run started before the store heard of it:
// Lookup says running on host while the stored run is still queued.
type lagRunner struct{ Runner }

func (lagRunner) Lookup(id string) (sandbox.RunInfo, bool) {
	return sandbox.RunInfo{ID: id, Status: sandbox.StatusRunning, Backend: "host", Started: time.Now()}, true
}

// TestRunShowBeforeTheStore: a run the runner has started shows where and
// since when it runs even while the store's writer has not put its running
// event down yet (beside stress-ng TestRunCreateRefusals read status
// running with no backend).
func TestRunShowBeforeTheStore(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	info := sandbox.RunInfo{ID: "0123456789abcdef", Learner: strings.Repeat("a", store.LearnerIDLen), Experiment: "ticks", Status: sandbox.StatusQueued, Created: time.Now()}
	if err := env.Hub.RunCreated(info); err != nil {
		t.Fatal(err)
	}
	env.Server.cfg.Runner = lagRunner{env.Server.cfg.Runner}
	var st runJSON
	r := env.get(env.client(), "/api/runs/"+info.ID)
	json.NewDecoder(r.Body).Decode(&st)
	r.Body.Close()
	if st.Status != sandbox.StatusRunning || st.Backend != "host" || st.Started == nil {
		t.Errorf("a run started before the store heard: %+v; want running on host, with its start time", st)
	}
}
