package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/internal/zhcheck"
	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/runhub"

	"github.com/PuerkitoBio/goquery"
)

// checkShPrograms runs a program's real check.sh with the host's /bin/sh,
// as the guest runs it after the program (LAB_EXIT, LAB_LANG,
// LAB_PEER_OUT), over peer: what lesson 06's peer (peers/rate-target.c)
// printed in a run. The guest is not started (the quick tier); what the
// check makes of the peer's report is the check's own.
type checkShPrograms struct {
	t    *testing.T
	peer string
}

func (c checkShPrograms) RunProgram(_ context.Context, _ string, p rdmalab.Program, lang string, _ func(sandbox.Event)) (rdmalab.ProgramEnd, error) {
	dir := c.t.TempDir()
	peerOut, check := filepath.Join(dir, "peer.out"), filepath.Join(dir, "check.sh")
	if err := os.WriteFile(peerOut, []byte(c.peer), 0o644); err != nil {
		return rdmalab.ProgramEnd{}, err
	}
	if err := os.WriteFile(check, p.Check, 0o755); err != nil {
		return rdmalab.ProgramEnd{}, err
	}
	cmd := exec.Command("/bin/sh", check)
	cmd.Env = append(os.Environ(), "LAB_EXIT=0", "LAB_LANG="+lang, "LAB_PEER_OUT="+peerOut)
	out, err := cmd.CombinedOutput()
	end := rdmalab.ProgramEnd{Stage: "check", Check: out, Passed: err == nil}
	if err != nil {
		end.Detail = err.Error()
	}
	return end, nil
}

// ratePeer is what rate-target.c prints when the learner's WRITEs ran
// beside ib_write_bw with the ratio median, low, high.
func ratePeer(median, low, high string) string {
	return "reference: running\npeer on rxe1: QP 17, buffer of 64 bytes, rkey 0x1234\nconnected: yes\n" +
		"received: lesson 06: sixty-four bytes per RDMA WRITE, as fast as it goes!\n" +
		"learner: packets 52000 window_us 5000000 chunks 48 alone 0\n" +
		"rates: learner 10400 reference 8000 reference_packets 40000\n" +
		"ratio: median " + median + " low " + low + " high " + high + "\n"
}

// boardEnv is lesson 06 served with a run hub, classes A and B.
type boardEnv struct {
	*instrEnv
	lesson *lessons.Lesson
	prog   *lessons.Program
	a, b   store.Cohort
	path   string
}

func newBoardEnv(t *testing.T) *boardEnv {
	// Lesson 06 and the lessons its pages link: the whole course.
	var slugs []string
	dirs, err := fs.ReadDir(lessons.Builtin, ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if d.IsDir() {
			slugs = append(slugs, d.Name())
		}
	}
	e := newInstrEnv(t, slugs...)
	e.Srv.cfg.Runs = runhub.New(e.DB, slog.New(slog.NewTextHandler(io.Discard, nil)))
	l := e.Live.Course().Lesson("06-performance")
	if l == nil {
		t.Fatal("no lesson 06")
	}
	p := l.Program("write-rate")
	if p == nil || p.Config.Leaderboard != "ratio" {
		t.Fatalf("write-rate has no leaderboard: %+v", p)
	}
	ctx := context.Background()
	a, err := e.DB.CreateCohort(ctx, "A", 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.DB.CreateCohort(ctx, "B", 0)
	if err != nil {
		t.Fatal(err)
	}
	return &boardEnv{instrEnv: e, lesson: l, prog: p, a: a, b: b, path: "/lessons/06-performance/programs/write-rate/leaderboard"}
}

// learner is a browser that joined class c (none: no class).
func (e *boardEnv) learner(c *store.Cohort) *http.Client {
	b := e.browser()
	e.page(e.do(b, "GET", "/", nil), 200)
	if c != nil {
		res := e.do(b, "POST", "/join", url.Values{"code": {c.Code}})
		res.Body.Close()
		if res.StatusCode >= 400 {
			e.t.Fatalf("join %s: %d", c.Name, res.StatusCode)
		}
	}
	return b
}

// run stores one run of write-rate by c's learner whose check read peer,
// as programRun and runProgram store it, and returns the check's words.
func (e *boardEnv) run(c *http.Client, peer, lang string) string {
	e.t.Helper()
	learner := learnerOf(e.t, c, e.HTTP.URL)
	id := fmt.Sprintf("%016x", time.Now().UnixNano())
	info := sandbox.RunInfo{ID: id, Learner: learner, Experiment: ProgramExperiment,
		Params: sandbox.Params{"lesson": e.lesson.Slug, "program": e.prog.ID}, Status: sandbox.StatusRunning, Created: time.Now()}
	if err := e.Srv.cfg.Runs.RunCreated(info); err != nil {
		e.t.Fatal(err)
	}
	req := rdmalab.Program{Check: e.prog.Check}
	e.Srv.runProgram(checkShPrograms{e.t, peer}, id, learner, e.lesson.Slug, e.prog, req, lang)
	evs, err := e.DB.RunEvents(context.Background(), id, 0, 100)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Type == sandbox.EvResult {
			return ev.Detail[lang]
		}
	}
	e.t.Fatalf("run %s: no result among %+v", id, evs)
	return ""
}

// boardLinked is whether c's state of the exercise offers the board.
func (e *boardEnv) boardLinked(c *http.Client) bool {
	e.t.Helper()
	res := e.do(c, "GET", "/api/lessons/06-performance/programs/write-rate", nil)
	defer res.Body.Close()
	var st struct {
		Leaderboard bool `json:"leaderboard"`
	}
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil || res.StatusCode != 200 {
		e.t.Fatalf("program state: %d %v", res.StatusCode, err)
	}
	return st.Leaderboard
}

type boardRow struct{ rank, who, value, interval, verdict string }

// board reads c's board page (want: its status).
func (e *boardEnv) board(c *http.Client, query string, want int) ([]boardRow, string) {
	e.t.Helper()
	d := e.page(e.do(c, "GET", e.path+query, nil), want)
	var rows []boardRow
	d.Find(`[data-testid="board-row"]`).Each(func(_ int, tr *goquery.Selection) {
		cells := tr.Find("td, th")
		txt := func(i int) string { return strings.TrimSpace(cells.Eq(i).Text()) }
		rows = append(rows, boardRow{txt(0), txt(1), txt(2), txt(3), txt(4)})
	})
	html, _ := d.Html()
	return rows, html
}

func (e *boardEnv) post(c *http.Client, form url.Values, want int) string {
	e.t.Helper()
	res := e.do(c, "POST", e.path, form)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		e.t.Fatalf("POST %v: %d, want %d\n%s", form, res.StatusCode, want, b)
	}
	return string(b)
}

// TestLeaderboardOptIn (issue 40): a learner is on their class's board
// only once they choose to, as an anonymous label unless they choose their
// display name; each row is their best checked run, the ratio and the
// interval the check itself reported (peer's report → check.sh → stored
// run); leaving removes the row; another class sees nothing of it.
func TestLeaderboardOptIn(t *testing.T) {
	e := newBoardEnv(t)
	ann, bob, cat := e.learner(&e.a), e.learner(&e.a), e.learner(&e.b)
	res := e.do(bob, "POST", "/me", url.Values{"name": {"Bob Real"}})
	res.Body.Close()

	// The check's words quote the figures; its figure lines are not shown.
	words := e.run(ann, ratePeer("1.12", "1.05", "1.20"), "en")
	if strings.Contains(words, "figure ") || !strings.Contains(words, "median 1.12, its 95% confidence interval 1.05–1.20") {
		t.Errorf("the check's words: %q", words)
	}
	e.run(ann, ratePeer("1.41", "1.35", "1.48"), "zh")
	e.run(ann, ratePeer("1.25", "1.18", "1.33"), "en")
	e.run(bob, ratePeer("1.20", "1.10", "1.31"), "en")
	e.run(cat, ratePeer("3.00", "2.90", "3.10"), "en")

	// The exercise links the board, shown to a learner with a class only.
	d := e.page(e.do(ann, "GET", "/lessons/06-performance?lang=zh", nil), 200)
	if href, _ := d.Find(`[data-testid="program-board"]`).Attr("href"); href != e.path {
		t.Errorf("the exercise links %q, want %q", href, e.path)
	}
	if got := e.boardLinked(ann); !got {
		t.Error("ann's exercise state does not offer the board")
	}
	if got := e.boardLinked(e.learner(nil)); got {
		t.Error("a learner in no class is offered the board")
	}
	// Off by default: nobody is on it.
	rows, html := e.board(ann, "", 200)
	if len(rows) != 0 || !strings.Contains(html, `data-testid="board-empty"`) {
		t.Fatalf("before anyone opted in: %+v", rows)
	}
	cls := "?class=" + strconv.FormatInt(e.a.ID, 10)
	e.post(ann, url.Values{"class": {strconv.FormatInt(e.a.ID, 10)}, "choice": {"anon"}}, http.StatusSeeOther)
	e.post(bob, url.Values{"class": {strconv.FormatInt(e.a.ID, 10)}, "choice": {"name"}}, http.StatusSeeOther)
	rows, html = e.board(ann, cls+"&lang=en", 200)
	want := []boardRow{
		{"1", "Learner 1 (you)", "1.41", "1.35–1.48", "passed"},
		{"2", "Bob Real", "1.20", "1.10–1.31", "not passed"},
	}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("class A's board:\n got %v\nwant %v", rows, want)
	}
	if strings.Contains(html, learnerOf(t, ann, e.HTTP.URL)) {
		t.Error("the board carries ann's learner id")
	}
	rows, _ = e.board(bob, cls+"&lang=zh", 200)
	if len(rows) != 2 || rows[0].who != "学员 1" || rows[1].who != "Bob Real（你）" || rows[0].verdict != "通过" {
		t.Errorf("bob's zh board: %+v", rows)
	}
	d = e.page(e.do(ann, "GET", e.path+cls+"&lang=zh", nil), 200)
	if p := zhcheck.Prose(strings.ReplaceAll(d.Find("main").Text(), "Bob Real", "")); len(p) > 0 {
		t.Errorf("the zh board holds English %q", p)
	}
	// Class B is another board: cat sees neither ann nor bob, and cannot
	// look at or join class A's.
	if rows, _ := e.board(cat, "", 200); len(rows) != 0 {
		t.Errorf("class B's board shows %+v", rows)
	}
	e.board(cat, cls, http.StatusForbidden)
	body := e.post(cat, url.Values{"class": {strconv.FormatInt(e.a.ID, 10)}, "choice": {"anon"}}, http.StatusForbidden)
	if !strings.Contains(body, "你不在这个班级里") {
		t.Errorf("cat joining class A's board: %s", body)
	}
	// Hostile forms: a forged ratio, a learner field, an unknown choice, a
	// name the learner does not have; none changes the board.
	for _, c := range []struct {
		c    *http.Client
		form url.Values
		want int
	}{
		{cat, url.Values{"class": {strconv.FormatInt(e.b.ID, 10)}, "choice": {"anon"}, "ratio": {"9.99"}}, http.StatusBadRequest},
		{cat, url.Values{"class": {strconv.FormatInt(e.b.ID, 10)}, "choice": {"anon"}, "learner": {learnerOf(t, ann, e.HTTP.URL)}}, http.StatusBadRequest},
		{cat, url.Values{"class": {strconv.FormatInt(e.b.ID, 10)}, "choice": {"first"}}, http.StatusBadRequest},
		{cat, url.Values{"class": {strconv.FormatInt(e.b.ID, 10)}, "choice": {"name"}}, http.StatusUnprocessableEntity},
		{cat, url.Values{"class": {"x"}, "choice": {"anon"}}, http.StatusForbidden},
		{cat, url.Values{"choice": {"anon"}}, http.StatusForbidden},
		{e.learner(nil), url.Values{"class": {strconv.FormatInt(e.a.ID, 10)}, "choice": {"anon"}}, http.StatusForbidden},
	} {
		e.post(c.c, c.form, c.want)
	}
	// A cross-site form post (another site's page joining for the
	// learner) is refused like every other.
	res = e.do(cat, "POST", e.path, url.Values{"class": {strconv.FormatInt(e.b.ID, 10)}, "choice": {"anon"}},
		"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example")
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site join: %d, want 403", res.StatusCode)
	}
	if rows, _ := e.board(cat, "", 200); len(rows) != 0 {
		t.Errorf("after the hostile forms class B's board shows %+v", rows)
	}
	if _, on, _ := e.DB.LeaderboardEntry(context.Background(), store.Board{Cohort: e.b.ID, Lesson: e.lesson.Slug, Program: e.prog.ID, Figure: "ratio"},
		learnerOf(t, cat, e.HTTP.URL)); on {
		t.Error("a refused form put cat on class B's board")
	}
	// Leaving removes the row.
	e.post(ann, url.Values{"class": {strconv.FormatInt(e.a.ID, 10)}, "choice": {"leave"}}, http.StatusSeeOther)
	if rows, _ := e.board(bob, cls+"&lang=en", 200); len(rows) != 1 || rows[0].who != "Bob Real (you)" || rows[0].rank != "1" {
		t.Errorf("after ann left: %+v", rows)
	}
}

// TestLeaderboardHidden: an instructor hides the class's board on the
// classes page; its learners then see only a sentence saying so, and
// joining is refused; showing it again brings it back as it was.
func TestLeaderboardHidden(t *testing.T) {
	e := newBoardEnv(t)
	ann := e.learner(&e.a)
	e.run(ann, ratePeer("1.41", "1.35", "1.48"), "en")
	e.post(ann, url.Values{"class": {strconv.FormatInt(e.a.ID, 10)}, "choice": {"anon"}}, http.StatusSeeOther)
	ada := e.instructor("ada", "correct horse battery")
	hide := "/instructor/classes/" + strconv.FormatInt(e.a.ID, 10) + "/leaderboard"
	res := e.do(ada, "POST", hide, url.Values{"hidden": {"1"}})
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("hide: %d", res.StatusCode)
	}
	d := e.page(e.do(ada, "GET", "/instructor/classes?lang=en", nil), 200)
	if s := d.Find(`[data-testid="class"][data-id="` + strconv.FormatInt(e.a.ID, 10) + `"] [data-testid="class-board"]`).Text(); !strings.Contains(s, "hidden from learners") {
		t.Errorf("the classes page says %q of class A's board", s)
	}
	rows, html := e.board(ann, "?lang=en", http.StatusForbidden)
	if len(rows) != 0 || !strings.Contains(html, "Your instructor hid this class") || strings.Contains(html, "Learner 1") ||
		strings.Contains(html, `data-testid="board-table"`) || strings.Contains(html, `data-testid="board-form"`) {
		t.Errorf("a hidden board shows: %+v\n%s", rows, html)
	}
	if e.boardLinked(ann) {
		t.Error("the exercise still offers a hidden board")
	}
	body := e.post(ann, url.Values{"class": {strconv.FormatInt(e.a.ID, 10)}, "choice": {"name"}}, http.StatusForbidden)
	if !strings.Contains(body, "Your instructor hid this class") {
		t.Errorf("joining a hidden board: %s", body)
	}
	// A learner who is not an instructor cannot hide it.
	res = e.do(ann, "POST", hide, url.Values{"hidden": {"0"}})
	res.Body.Close()
	if res.StatusCode < 400 && res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") == "/instructor/classes?archived=1" {
		t.Errorf("a learner's hide: %d → %q", res.StatusCode, res.Header.Get("Location"))
	}
	res = e.do(ada, "POST", hide, url.Values{"hidden": {"0"}})
	res.Body.Close()
	if rows, _ := e.board(ann, "?lang=en", 200); len(rows) != 1 || rows[0].who != "Learner 1 (you)" || rows[0].value != "1.41" {
		t.Errorf("shown again: %+v", rows)
	}
}

// TestCheckFigures: a check's "figure NAME VALUE" lines become figures and
// leave the words; a line that only looks like one stays in the words and
// names nothing; the lab's own figures are never overwritten by a check.
func TestCheckFigures(t *testing.T) {
	figs, rest := checkFigures("figure ratio 1.41\nfigure ratio_low 1.35\nfigure Bad 2\nfigure x 1e9\nfigure y 1.2.3\nThe words.\nfigure compile_ms 0")
	if len(figs) != 3 || figs["ratio"] != 1.41 || figs["ratio_low"] != 1.35 || figs["compile_ms"] != 0 {
		t.Errorf("figures %v", figs)
	}
	if rest != "figure Bad 2\nfigure x 1e9\nfigure y 1.2.3\nThe words." {
		t.Errorf("words %q", rest)
	}
	e := newBoardEnv(t)
	ann := e.learner(&e.a)
	e.prog = &lessons.Program{ID: e.prog.ID, Check: []byte("echo figure compile_ms 999999; echo figure ratio 2.5; exit 1")}
	e.run(ann, "", "en")
	runs, err := e.DB.LearnerRuns(context.Background(), learnerOf(t, ann, e.HTTP.URL), 10)
	if err != nil || len(runs) != 1 || runs[0].Result == nil {
		t.Fatalf("runs %+v %v", runs, err)
	}
	if f := runs[0].Result.Figures; f["compile_ms"] == 999999 || f["ratio"] != 2.5 {
		t.Errorf("the result's figures %v: the check overwrote compile_ms, or its ratio is missing", f)
	}
}
