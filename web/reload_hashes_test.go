package web

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// reloadHashes splits a reload token into version and lesson hashes.
func reloadHashes(t *testing.T, data string) (string, map[string]string) {
	t.Helper()
	v, js, ok := strings.Cut(data, " ")
	var m map[string]string
	if !ok || json.Unmarshal([]byte(js), &m) != nil {
		t.Fatalf("token %q has no lesson hashes", data)
	}
	return v, m
}

// TestReloadLessonHashes: the reload token carries a hash per lesson, so
// reload.js reloads only pages whose lesson changed: adding lesson 02
// leaves lesson 01's hash alone; editing 01 changes only 01's.
func TestReloadLessonHashes(t *testing.T) {
	e := newInstrEnv(t)
	ls := e.openReload(e.browser())
	v0, h0 := reloadHashes(t, nextEvent(t, ls, "state").Data)
	if h0["01-alpha"] == "" || len(h0) != 1 {
		t.Fatalf("hashes %v", h0)
	}
	beta := func(body string) {
		for _, lang := range []string{"en", "zh"} {
			writeTestFile(t, filepath.Join(e.Dir, "02-beta", "index."+lang+".md"),
				"---\ntitle: Beta\nsummary: Second.\norder: 2\n---\n\n"+body+"\n")
		}
	}
	beta("Beta one.")
	var v1 string
	var h1 map[string]string
	for h1["02-beta"] == "" { // the two files may land in one reload or two
		ev := nextEvent(t, ls, "reload after adding 02")
		v1, h1 = reloadHashes(t, ev.Data)
	}
	if v1 == v0 || h1["01-alpha"] != h0["01-alpha"] {
		t.Fatalf("adding lesson 02 changed 01's hash: %v → %v", h0, h1)
	}
	writeTestFile(t, filepath.Join(e.Dir, "01-alpha", "index.en.md"), alphaPage("en", "Alpha", "Second version."))
	_, h2 := reloadHashes(t, nextEvent(t, ls, "reload after editing 01").Data)
	if h2["01-alpha"] == h1["01-alpha"] || h2["02-beta"] != h1["02-beta"] {
		t.Fatalf("editing 01: %v → %v", h1, h2)
	}
}
