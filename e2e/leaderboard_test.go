package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/store"
)

// TestLeaderboard (issue 40): a learner of a class opens lesson 06's
// write-rate leaderboard from the exercise, joins it with the keyboard
// alone, and finds their row with their best checked run's ratio; the page
// passes axe-core in both languages, light and dark, 1280 and 375 px; the
// instructor hides the board on the classes page and the learner then sees
// only the sentence saying so (axe-clean too).
func TestLeaderboard(t *testing.T) {
	flow(t)
	admin := newBrowser(t, shared)
	instructorLogin(admin)
	admin.open("/instructor/classes?lang=en")
	name := fmt.Sprintf("board e2e %d", time.Now().UnixNano())
	admin.do("name the class", chromedp.SendKeys(chromedp.CSS(`[data-testid=classes] input[name=name]`), name))
	admin.navigates("create the class", chromedpClick(`[data-testid=class-create]`))
	row := `(function(){var rows=document.querySelectorAll("[data-testid=class]");for(var r of rows){if(r.textContent.indexOf(` + jsString(name) + `)>=0){return r}}return null})()`
	join := eval[string](admin, `new URL(`+row+`.querySelector("[data-testid=class-join-url]").value).pathname`)
	classID := eval[string](admin, row+`.dataset.id`)

	learner := newBrowser(t, shared)
	learner.open(join + "?lang=en")
	learner.navigates("join", chromedpClick(`[data-testid=join-submit]`))

	// A checked run of write-rate, stored as the lab stores one (the
	// guest's part is the terminal tests'; what the check's figure lines
	// become is web's TestLeaderboardOptIn).
	id, _ := strconv.ParseInt(classID, 10, 64)
	db, err := store.Open(shared.DB)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	members, err := db.ClassLearnersIn(ctx, store.Scope{Cohort: id}, 0, 0, time.Time{})
	if err != nil || len(members.Learners) != 1 {
		db.Close()
		t.Fatalf("class members %+v %v", members, err)
	}
	runID := fmt.Sprintf("%016x", time.Now().UnixNano())
	ok := true
	if err := db.CreateRun(ctx, rdmalab.RunInfo{ID: runID, Learner: members.Learners[0].ID, Experiment: "program",
		Params: rdmalab.Params{"lesson": "06-performance", "program": "write-rate"}, Status: rdmalab.StatusRunning, Created: time.Now()}); err != nil {
		db.Close()
		t.Fatal(err)
	}
	for i, ev := range []rdmalab.Event{
		{Type: rdmalab.EvResult, OK: &ok, Name: "check", Figures: map[string]float64{"ratio": 1.41, "ratio_low": 1.35, "ratio_high": 1.48}},
		{Type: rdmalab.EvStatus, Status: rdmalab.StatusDone},
	} {
		ev.Seq, ev.Time = int64(i+1), time.Now()
		if err := db.AppendRunEvent(ctx, runID, ev); err != nil {
			db.Close()
			t.Fatal(err)
		}
	}
	db.Close()

	learner.open("/lessons/06-performance?lang=en")
	learner.navigates("open the leaderboard", chromedpClick(`[data-testid=program-board]`))
	if n := learner.count(`[data-testid=board-row]`); n != 0 {
		t.Fatalf("before joining the board has %d rows", n)
	}
	// The keyboard alone: focus the anonymous choice, Tab to Join (past
	// the link to set a display name: this learner has none), Enter.
	learner.do("focus the anonymous choice", evalVoid(`document.querySelector("[data-testid=board-anon]").focus()`))
	for i := 0; i < 2; i++ {
		learner.do("Tab", chromedp.KeyEvent(kb.Tab))
	}
	if !eval[bool](learner, `document.activeElement && document.activeElement.matches("[data-testid=board-join]")`) {
		t.Fatalf("two Tabs from the choice reached %s, not Join", eval[string](learner, `document.activeElement.outerHTML.slice(0, 120)`))
	}
	learner.navigates("Enter on Join", chromedp.KeyEvent(kb.Enter))
	if got := learner.text(`[data-testid=board-row]`); !strings.Contains(got, "(you)") || !strings.Contains(got, "1.41") || !strings.Contains(got, "1.35–1.48") {
		t.Errorf("after joining the row says %q", got)
	}
	for _, lang := range []string{"en", "zh"} {
		learner.open("/lessons/06-performance/programs/write-rate/leaderboard?lang=" + lang)
		for _, s := range axeStates {
			learner.setState(s)
			checkAxe(t, learner, "leaderboard "+lang+" "+s.String())
		}
	}

	// Hidden by the instructor.
	admin.open("/instructor/classes?lang=en")
	admin.navigates("hide the board", chromedpClick(`[data-testid=class][data-id="`+classID+`"] [data-testid=class-board-hide]`))
	t.Cleanup(func() {
		admin.open("/instructor/classes?archived=1&lang=en")
		if admin.count(`[data-testid=class][data-id="`+classID+`"] [data-testid=class-board-show]`) == 1 {
			admin.navigates("show the board again", chromedpClick(`[data-testid=class][data-id="`+classID+`"] [data-testid=class-board-show]`))
		}
	})
	for _, lang := range []string{"en", "zh"} {
		learner.open("/lessons/06-performance/programs/write-rate/leaderboard?lang=" + lang)
		if learner.count(`[data-testid=board-hidden]`) != 1 || learner.count(`[data-testid=board-table]`) != 0 || learner.count(`[data-testid=board-form]`) != 0 {
			t.Errorf("%s: the hidden board still shows something", lang)
		}
		for _, s := range axeStates[:2] {
			learner.setState(s)
			checkAxe(t, learner, "hidden leaderboard "+lang+" "+s.String())
		}
	}
}
