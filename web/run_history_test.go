package web

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/runs/runner"
)

// /runs is linked from every page's header and from the lesson; it shows
// each run's params by their titles; the replay page names params in the
// learner's language; /favicon.ico is served; GET /api/runs/live names the
// learner's live run.
func TestRunHistoryLinksParamsFavicon(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	c := env.client()
	doc := env.doc(c, "/lessons/01-one?lang=zh", http.StatusOK)
	if doc.Find(`header.site a[href="/runs"]`).Length() != 1 {
		t.Error("the header does not link /runs")
	}
	if doc.Find(`article.lesson a[href="/runs"]`).Length() != 1 {
		t.Error("the lesson does not link /runs")
	}
	if sk := doc.Find(`a.skip-toc`); sk.Length() != 1 || sk.Next().Is("nav.toc") == false {
		t.Error("no skip link right before the table of contents")
	}

	var live struct{ Run *liveRunJSON }
	env.getJSON(c, "/api/runs/live", &live)
	if live.Run != nil {
		t.Fatalf("live run before any: %+v", live.Run)
	}
	key := int64(77001)
	id := env.submit(c, "hold", map[string]any{"key": key, "before": 1})
	env.getJSON(c, "/api/runs/live", &live)
	if live.Run == nil || live.Run.ID != id || live.Run.Experiment != "hold" {
		t.Fatalf("live run %+v, want %s", live.Run, id)
	}
	close(gate(key))
	s := env.stream(c, id)
	s.events(t)
	env.getJSON(c, "/api/runs/live", &live)
	if live.Run != nil {
		t.Errorf("live run after it ended: %+v", live.Run)
	}

	id2 := env.submit(c, "ticks", map[string]any{"n": 3, "size": 65536})
	env.stream(c, id2).events(t)
	doc = env.doc(c, "/runs?lang=zh", http.StatusOK)
	params := doc.Find(`[data-testid=run-row-params]`).First().Text()
	if !strings.Contains(params, "64 KiB") || !strings.Contains(params, "n = 3") {
		t.Errorf("history params %q", params)
	}
	if doc.Find(`.run-list td.nowrap a`).Length() < 2 {
		t.Error("run times may wrap")
	}
	page := env.doc(c, "/runs/"+id2+"?lang=zh", http.StatusOK)
	if txt := page.Find(`[data-testid=run-params]`).Text(); !strings.Contains(txt, "64 KiB") {
		t.Errorf("replay params %q", txt)
	}

	res := env.get(c, "/favicon.ico")
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "image/x-icon" || len(b) < 20 || b[2] != 1 {
		t.Errorf("favicon: %d %s %d bytes", res.StatusCode, res.Header.Get("Content-Type"), len(b))
	}
}

func (e *runEnv) getJSON(c *http.Client, path string, out any) {
	e.t.Helper()
	res := e.get(c, path)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		e.t.Fatalf("GET %s: %d %s", path, res.StatusCode, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		e.t.Fatalf("GET %s: %v", path, err)
	}
}
