package web

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/sandbox/runner"
)

// TestProgramCodeSaved: the built-in lesson's exercises render as editors
// without their solutions in the page; a learner's code is saved and
// comes back, another learner starts from the starter; the solution is
// given on request and recorded.
func TestProgramCodeSaved(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	course, err := lessons.Load(lessons.Builtin, lessons.Options{})
	if err != nil {
		t.Fatal(err)
	}
	env.Course.Store(course)
	l := course.Lesson("04-first-program")
	p := l.Programs[0]
	ann, bob := env.client(), env.client()
	for _, lang := range []string{"zh", "en"} {
		doc := env.doc(ann, "/lessons/04-first-program?lang="+lang, 200)
		if n := doc.Find(`[data-testid="program"]`).Length(); n != len(l.Programs) {
			t.Errorf("%s: %d program widgets, want %d", lang, n, len(l.Programs))
		}
		html, _ := doc.Html()
		if strings.Contains(html, "ibv_query_gid(ctx, 1, 1, &amp;gid)) {") {
			t.Errorf("%s: the page carries a solution", lang)
		}
	}
	env.get(bob, "/lessons/04-first-program").Body.Close()
	base := "/api/lessons/04-first-program/programs/" + p.ID
	call := func(c *http.Client, method, path, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, env.HTTP.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		var out map[string]any
		_ = json.Unmarshal(b, &out)
		return res.StatusCode, out
	}
	code, st := call(ann, "GET", base, "")
	if code != 200 || st["source"] != string(p.Starter) || st["saved"] != false {
		t.Fatalf("first load: %d saved %v", code, st["saved"])
	}
	mine := "int main(void) { return 42; }\n"
	body, _ := json.Marshal(map[string]string{"source": mine})
	if code, _ := call(ann, "PUT", base+"/code", string(body)); code != 200 {
		t.Fatalf("save: %d", code)
	}
	if _, st := call(ann, "GET", base, ""); st["source"] != mine {
		t.Errorf("reload: %q, want the saved code", st["source"])
	}
	if _, st := call(bob, "GET", base, ""); st["source"] != string(p.Starter) {
		t.Errorf("another learner sees %q, want the starter", st["source"])
	}
	big, _ := json.Marshal(map[string]string{"source": strings.Repeat("x", maxProgramSource+1)})
	if code, _ := call(ann, "PUT", base+"/code", string(big)); code != 400 && code != 413 {
		t.Errorf("an oversized save: %d, want 400 or 413", code)
	}
	if code, out := call(ann, "POST", base+"/solution", ""); code != 200 || out["solution"] != string(p.Solution) {
		t.Errorf("solution: %d", code)
	}
	if _, st := call(ann, "GET", base, ""); st["solution_seen"] != true {
		t.Errorf("the solution's showing was not recorded")
	}
	if code, _ := call(ann, "GET", "/api/lessons/04-first-program/programs/nope", ""); code != 404 {
		t.Errorf("unknown program: %d", code)
	}
}

// TestProgramDiagnostics: tcc's and gcc's lines become errors at their
// lines; other output does not.
func TestProgramDiagnostics(t *testing.T) {
	out := "main.c:3: error: identifier expected\nmain.c:7:12: warning: unused variable 'x'\ntcc: error: undefined symbol 'foo'\n"
	evs := programDiagnostics(out)
	if len(evs) != 2 {
		t.Fatalf("%d diagnostics, want 2: %+v", len(evs), evs)
	}
	if evs[0].Figures["line"] != 3 || evs[0].Name != "error" || evs[0].Message != "identifier expected" {
		t.Errorf("first: %+v", evs[0])
	}
	if evs[1].Figures["line"] != 7 || evs[1].Figures["column"] != 12 || evs[1].Name != "warning" {
		t.Errorf("second: %+v", evs[1])
	}
}
