package web

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/runs/runner"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/store"
)

// TestDisplayNameRefusesDirectionControls is issue 18.9: U+202E in a name
// reversed what followed it on the dashboard.
func TestDisplayNameRefusesDirectionControls(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	id := store.NewLearnerID()
	for _, name := range []string{"Ada\u202Eevil", "\u2066x\u2069", "a\u200Fb"} {
		err := env.DB.SetDisplayName(context.Background(), id, name)
		var ve *store.ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("SetDisplayName(%q): %v, want a validation error", name, err)
		}
	}
	if err := env.DB.SetDisplayName(context.Background(), id, "李雷 Ada"); err != nil {
		t.Errorf("a plain name refused: %v", err)
	}
}

// TestSecurityHeaders is issue 18.5 and 18.6: every answer carries the
// CSP and friends; instructor pages are no-store.
func TestSecurityHeaders(t *testing.T) {
	e := newInstrEnv(t)
	c := e.instructor("ada", "correct horse battery")
	for _, path := range []string{"/", "/api/experiments", "/instructor", "/instructor/export/progress.csv", "/nope", "/static/css/lab.css"} {
		res := e.do(c, "GET", path, nil)
		res.Body.Close()
		h := res.Header
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s: CSP %q", path, csp)
		}
		if h.Get("X-Frame-Options") != "DENY" || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") == "" {
			t.Errorf("%s: headers %v", path, h)
		}
		if strings.HasPrefix(path, "/instructor") && h.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: Cache-Control %q, want no-store", path, h.Get("Cache-Control"))
		}
	}
}

// noLab is a server whose RDMA backend is none.
type noLab struct{}

func (noLab) Lab(context.Context) sandbox.Lab {
	return sandbox.Lab{Backend: "none", State: sandbox.LabNone, Reason: sandbox.Text{"en": "started with --backend none", "zh": "以 --backend none 启动"}}
}

// TestRDMARefusedWithoutBackend is issue 18.8: with --backend none an RDMA
// experiment took a queue slot and failed only on its turn. It is refused
// at submission, on both routes; host experiments still run.
func TestRDMARefusedWithoutBackend(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	env.Server.cfg.Experiments.Register(&sandbox.Experiment{ID: "needs-rdma", Needs: sandbox.NeedRDMA, Sharing: sandbox.Shareable,
		Run: func(context.Context, sandbox.Params, sandbox.Emitter) error { return nil }})
	env.Server.cfg.Lab = noLab{}
	c := env.client()
	res := env.postJSON(c, "/api/runs?lang=en", `{"experiment":"needs-rdma","params":{}}`, nil)
	if res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("RDMA run with no backend: %d, want 503", res.StatusCode)
	}
	res, err := c.PostForm(env.HTTP.URL+"/runs", map[string][]string{"experiment": {"needs-rdma"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("form: %d, want 503", res.StatusCode)
	}
	env.submit(c, "ticks", map[string]any{"n": 1})
}

// TestRunRequestIsStrict is issue 18.9: /api/runs took unknown fields,
// trailing JSON and any content type.
func TestRunRequestIsStrict(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	c := env.client()
	for _, tc := range []struct{ ct, body string }{
		{"application/json", `{"experiment":"ticks","params":{"n":1},"admin":true}`},
		{"application/json", `{"experiment":"ticks","params":{"n":1}}{"experiment":"ticks"}`},
		{"text/plain", `{"experiment":"ticks","params":{"n":1}}`},
		{"", `{"experiment":"ticks","params":{"n":1}}`},
	} {
		req, _ := http.NewRequest("POST", env.HTTP.URL+"/api/runs", strings.NewReader(tc.body))
		if tc.ct != "" {
			req.Header.Set("Content-Type", tc.ct)
		}
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusBadRequest {
			t.Errorf("%s %s: %d, want 400", tc.ct, tc.body, res.StatusCode)
		}
	}
}
