package web

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/rdmalab/rdmalab/runs/runner"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/web/views"
)

// RDMA experiments show the Soft-RoCE lab's state (experiment.js fills it
// from /api/lab and keeps Run disabled until ready); host experiments don't.
func TestRDMAWidgetShowsLabState(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	env.Server.cfg.Experiments.Register(&sandbox.Experiment{
		ID: "needs-rdma", Needs: sandbox.NeedRDMA, Title: sandbox.Text{"en": "RDMA"},
		Run: func(context.Context, sandbox.Params, sandbox.Emitter) error { return nil },
	})
	for _, tc := range []struct {
		id   string
		want bool
	}{{"needs-rdma", true}, {"ticks", false}} {
		var b bytes.Buffer
		if err := views.Experiment(env.Server.experimentWidget("en", tc.id, nil)).Render(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		d, err := goquery.NewDocumentFromReader(&b)
		if err != nil {
			t.Fatal(err)
		}
		if d.Find(`[data-testid="experiment-form"]`).Length() != 1 {
			t.Fatalf("%s: no experiment form (unavailable?)", tc.id)
		}
		lab := d.Find("[data-lab-status]")
		if got := lab.Length() == 1; got != tc.want {
			t.Errorf("%s: lab status line present = %v, want %v", tc.id, got, tc.want)
		}
		if tc.want {
			if href, _ := lab.Find("a").Attr("href"); href != "/lab" || !strings.Contains(lab.Text(), "Soft-RoCE") {
				t.Errorf("%s: lab line %q links %q, want a Soft-RoCE link to /lab", tc.id, lab.Text(), href)
			}
			if d.Find(`[data-testid="run"]`).Length() != 1 {
				t.Errorf("%s: no Run button", tc.id)
			}
		}
	}
	// The strings experiment.js formats are sent to the browser.
	for _, k := range []string{"run.lab.booting", "run.lab.ready", "run.lab.none"} {
		if !strings.Contains(clientStrings("zh"), k) {
			t.Errorf("client strings lack %s", k)
		}
	}
}
