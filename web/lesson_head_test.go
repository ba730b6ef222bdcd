package web

import (
	"slices"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/rdmalab/rdmalab/web/views"
)

// componentAssets is every stylesheet and script a component may need.
func componentAssets() (styles, scripts []string) {
	for _, a := range []views.Assets{views.ExperimentAssets, views.TableAssets, views.PathDiagramAssets,
		views.CPUBudgetAssets, views.WorthItAssets, views.QuizAssets} {
		for _, p := range a.Styles {
			if !slices.Contains(styles, p) {
				styles = append(styles, p)
			}
		}
		for _, p := range a.Scripts {
			if !slices.Contains(scripts, p) {
				scripts = append(scripts, p)
			}
		}
	}
	return styles, scripts
}

// checkHeadAssets checks that page d links each of want exactly once, in
// its head (scripts deferred), links no other component asset, and that
// the body links none: components no longer place their own.
func checkHeadAssets(t *testing.T, page string, d *goquery.Document, want ...views.Assets) {
	t.Helper()
	var wantStyles, wantScripts []string
	for _, a := range want {
		wantStyles = append(wantStyles, a.Styles...)
		wantScripts = append(wantScripts, a.Scripts...)
	}
	styles, scripts := componentAssets()
	for _, p := range styles {
		n := d.Find(`link[rel=stylesheet][href*="/` + p + `"]`).Length()
		inHead := d.Find(`head link[rel=stylesheet][href*="/` + p + `"]`).Length()
		switch {
		case slices.Contains(wantStyles, p) && (n != 1 || inHead != 1):
			t.Errorf("%s: %s linked %d times (%d in head), want once in head", page, p, n, inHead)
		case !slices.Contains(wantStyles, p) && n != 0:
			t.Errorf("%s: %s linked %d times, want none", page, p, n)
		}
	}
	for _, p := range scripts {
		sel := `script[src*="/` + p + `"]`
		n := d.Find(sel).Length()
		inHead := d.Find(`head ` + sel + `[defer]`).Length()
		switch {
		case slices.Contains(wantScripts, p) && (n != 1 || inHead != 1):
			t.Errorf("%s: %s loaded %d times (%d deferred in head), want once, deferred, in head", page, p, n, inHead)
		case !slices.Contains(wantScripts, p) && n != 0:
			t.Errorf("%s: %s loaded %d times, want none", page, p, n)
		}
	}
	if n := d.Find(`body link, body script[src]`).Length(); n != 0 {
		t.Errorf("%s: %d stylesheets or scripts in the body", page, n)
	}
	// experiment.js uses uPlot and the chart bands: deferred scripts run in
	// document order.
	var order []string
	d.Find(`head script[src]`).Each(func(_ int, s *goquery.Selection) {
		src, _ := s.Attr("src")
		order = append(order, src)
	})
	pos := func(p string) int {
		return slices.IndexFunc(order, func(src string) bool { return strings.Contains(src, "/"+p) })
	}
	if e := pos("js/experiment.js"); e >= 0 && (pos("vendor/uplot/uPlot.iife.min.js") > e || pos("js/chart-bands.js") > e) {
		t.Errorf("%s: experiment.js runs before uPlot or chart-bands.js: %q", page, order)
	}
}

// Lesson 01 (every kind of component, several of each) links each asset
// once, in its head, in both languages and from both skeletons; run pages
// and the lab page get theirs too.
func TestLessonAssetsOnce(t *testing.T) {
	env, _ := lessonPageCases(t)
	c := env.client()
	lesson := []views.Assets{views.QuizAssets, views.ExperimentAssets, views.CPUBudgetAssets,
		views.PathDiagramAssets, views.WorthItAssets}
	for _, lang := range []string{"zh", "en"} {
		for _, path := range []string{
			"/lessons/" + benchSlug + "?lang=" + lang,        // the static skeleton
			"/lessons/" + benchSlug + "?lang=" + lang + "&x", // every segment per request
		} {
			checkHeadAssets(t, path, env.doc(c, path, 200), lesson...)
		}
	}

	id := env.submit(c, "tcp-cost", map[string]any{"seconds": 1, "msg_size": 4096})
	if _, ended := env.stream(c, id).events(t); !ended {
		t.Fatal("run stream did not end")
	}
	checkHeadAssets(t, "run page", env.doc(c, "/runs/"+id, 200), views.ExperimentAssets)
	checkHeadAssets(t, "run history", env.doc(c, "/runs", 200), views.TableAssets)
	checkHeadAssets(t, "lab page", env.doc(c, "/lab", 200), views.TableAssets)
	checkHeadAssets(t, "home page", env.doc(c, "/", 200))
}

// The fixture lesson places a question its course lacks and a checkpoint
// without a quiz: both render placeholders, so the page links no quiz
// assets, only those of its diagram and experiment.
func TestLessonAssetsFollowComponents(t *testing.T) {
	env := newEnv(t, nil)
	for _, path := range []string{"/lessons/01-one?lang=en", "/lessons/01-one?lang=en&x"} {
		d := env.doc(env.client(), path, 200)
		if d.Find("[data-testid=quiz]").Length() != 0 || d.Find("[data-testid=diagram]").Length() != 1 {
			t.Fatalf("%s: the fixture lesson changed", path)
		}
		checkHeadAssets(t, path, d, views.PathDiagramAssets, views.ExperimentAssets)
	}
}
