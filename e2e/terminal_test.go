package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// termText is the text in the page's terminal (xterm.js's buffer: what it
// shows and keeps as scrollback).
const termText = `(function(){ var b = document.querySelector(".term"), t = b && b._term; if (!t) return ""; var buf = t.buffer.active, out = []; for (var i = 0; i < buf.length; i++) { var l = buf.getLine(i); if (l) out.push(l.translateToString(true)); } return out.join("\n"); })()`

// typeLine types a line into the page's terminal as xterm.js's own input
// (what a key press gives; chromedp's synthetic keys reach xterm twice).
func typeLine(b *browser, line string) {
	b.t.Helper()
	b.do("type "+line, chromedp.Evaluate[chromedp.Void](`document.querySelector(".term")._term.input(`+jsString(line+"\r")+`, true)`))
}

func jsString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\r", `\r`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// waitTerm waits until the terminal shows want.
func waitTerm(b *browser, want string) {
	b.t.Helper()
	b.waitFor("the terminal shows "+want, termText+`.includes(`+jsString(want)+`)`, guestTimeout)
}

// checkTask presses Check on task id and waits for the answer; it returns
// the answer's status and text.
func checkTask(b *browser, id string) (status, text string) {
	b.t.Helper()
	sel := `[data-testid=task][data-task=` + id + `]`
	b.do("reset "+id, chromedp.Evaluate[chromedp.Void](`delete document.querySelector('`+sel+`').dataset.status`))
	b.click(sel + ` [data-testid=task-check]`)
	b.waitFor("the check of "+id, `document.querySelector('`+sel+`').dataset.status`, guestTimeout)
	return eval[string](b, `document.querySelector('`+sel+`').dataset.status`), b.text(sel + ` [data-testid=task-result]`)
}

// TestLesson01Terminal: lesson 01's terminal against real Soft-RoCE
// guests (its own labserver with the vm backend and two learner
// terminals). Learner one types ibv_devices and sees rxe0 and rxe1; a
// reload finds the same shell with its scrollback; the memlock task fails
// before the learner raised the limit (with the script's hint) and passes
// after, and its done mark survives a reload; the write-bw task passes
// after the lesson's ib_write_bw commands. Learner two's terminal is
// another machine: learner one's file is not there, their limit is still
// the boot value, and Check said "no terminal" before they opened one, in
// Chinese. The instructor's gradebook and dashboard count learner one's tasks.
func TestLesson01Terminal(t *testing.T) {
	flow(t)
	dir := t.TempDir()
	vmDir := guestDir
	lab, err := startLab(filepath.Join(dir, "lab"), []string{"LAB_BACKEND=vm", "LAB_VM_DIR=" + vmDir, "LAB_TERMINALS=2", "LAB_TERMINALS_PER_ADDR=2"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := lab.Stop(labStopTimeout); err != nil {
			t.Errorf("stopping the vm labserver: %v", err)
		}
	})
	const lesson = "/lessons/01-why-rdma"

	one := newBrowser(t, lab)
	one.open(lesson + "?lang=en")
	if n := one.count(`[data-testid=task]`); n != 2 {
		t.Fatalf("%d tasks on lesson 01, want 2", n)
	}
	one.click(`[data-testid=terminal-open]`)
	waitTerm(one, "learner@rdmalab-guest")
	typeLine(one, "ibv_devices")
	waitTerm(one, "rxe1")
	out := eval[string](one, termText)
	if !strings.Contains(out, "rxe0") {
		t.Errorf("ibv_devices lists no rxe0:\n%s", out)
	}
	typeLine(one, "echo learner-one > ~/mine; echo wrote-$((40+2))")
	waitTerm(one, "wrote-42")

	// The memlock task: not yet (the guest boots with 8 MiB) …
	status, text := checkTask(one, "memlock")
	if status != "failed" || !strings.Contains(text, "still 8192 KiB") {
		t.Errorf("memlock before ulimit: %s %q", status, text)
	}
	// … then done.
	typeLine(one, "ulimit -l 65536; echo lim-$(ulimit -l)")
	waitTerm(one, "lim-65536")
	status, text = checkTask(one, "memlock")
	if status != "passed" || !strings.Contains(text, "65536 KiB") {
		t.Errorf("memlock after ulimit: %s %q", status, text)
	}
	// The count beside Check follows the checks (the page was served before them).
	if got := one.text(`[data-task=memlock] .task-checks`); got != "checked 2 times" {
		t.Errorf("memlock's count after two checks, no reload: %q", got)
	}

	// The write-bw task with the lesson's own commands: 64 KiB WRITEs from
	// rxe0 to rxe1, the report kept, checked against rxe0's counter.
	// perftest under TCG sometimes gives up mid-test (seen once: the server
	// exited 1 after the address exchange and the report had no row); like
	// the lab's own perftest runs, and a learner, try again — at most three
	// times. The check script decides.
	for attempt := 1; ; attempt++ {
		typeLine(one, "ib_write_bw -d rxe1 -x 1 -s 65536 -n 200 >/dev/null 2>&1 &  sleep 2")
		typeLine(one, fmt.Sprintf("ib_write_bw -d rxe0 -x 1 -s 65536 -n 200 10.0.0.2 | tee ~/bw.txt; wait; echo bw-$((3*3))-%d", attempt))
		waitTerm(one, fmt.Sprintf("bw-9-%d", attempt))
		status, text = checkTask(one, "write-bw")
		if status == "passed" || attempt == 3 {
			break
		}
		t.Logf("write-bw, attempt %d: %s %q; running perftest again", attempt, status, text)
	}
	if status != "passed" || !strings.Contains(text, "rxe0 sent 200 RDMA WRITEs of 64 KiB") || !strings.Contains(text, "not a hardware figure") {
		t.Errorf("write-bw after ib_write_bw: %s %q", status, text)
	}

	// A reload: the same shell, its scrollback, and the done mark from the store.
	one.open(lesson + "?lang=en")
	waitTerm(one, "wrote-42")
	if out := eval[string](one, termText); !strings.Contains(out, "rxe0") || !strings.Contains(out, "lim-65536") {
		t.Errorf("after a reload the terminal lacks the earlier output:\n%s", out)
	}
	if !eval[bool](one, `document.querySelector('[data-task=memlock]').classList.contains('task-done')`) ||
		one.text(`[data-task=memlock] [data-testid=task-state]`) != "Done ✓" {
		t.Errorf("after a reload memlock is not marked done: %q", one.text(`[data-task=memlock] [data-testid=task-state]`))
	}
	typeLine(one, "cat ~/mine; echo same-$((5+5))")
	waitTerm(one, "same-10")

	// Learner two, in Chinese: no terminal yet, then their own machine.
	two := newBrowser(t, lab)
	two.open(lesson + "?lang=zh")
	status, text = checkTask(two, "memlock")
	if status != "no-terminal" || !strings.Contains(text, "你的终端还没有打开") {
		t.Errorf("learner two before opening a terminal: %s %q", status, text)
	}
	two.click(`[data-testid=terminal-open]`)
	waitTerm(two, "learner@rdmalab-guest")
	typeLine(two, "cat ~/mine 2>/dev/null || echo absent-$((1+1))")
	waitTerm(two, "absent-2")
	if strings.Contains(eval[string](two, termText), "learner-one") {
		t.Errorf("learner two's machine has learner one's file")
	}
	status, text = checkTask(two, "memlock")
	if status != "failed" || !strings.Contains(text, "仍是 8192 KiB") {
		t.Errorf("learner two's memlock (zh): %s %q", status, text)
	}
	if two.text(`[data-task=memlock] [data-testid=task-state]`) != "尚未完成" {
		t.Errorf("learner two's memlock state %q", two.text(`[data-task=memlock] [data-testid=task-state]`))
	}

	// The instructor sees learner one's task in the gradebook.
	ins := newBrowser(t, lab)
	ins.open("/instructor?lang=en")
	ins.do("fill the login form",
		chromedp.SendKeys(chromedp.CSS(`[data-testid=instructor-login] input[name=username]`), "admin"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid=instructor-login] input[name=password]`), instructorPassword))
	ins.navigates("log in", chromedp.Click(chromedp.CSS(`[data-testid=instructor-login] button[type=submit]`), chromedp.NodeVisible))
	ins.open("/instructor/gradebook?lang=en")
	cells := eval[[]string](ins, `Array.from(document.querySelectorAll('[data-testid=grade-tasks]')).map(e => e.textContent.trim())`)
	if !strings.Contains(strings.Join(cells, "|"), "terminal tasks 2/2") {
		t.Errorf("gradebook task cells %q, want one with terminal tasks 2/2", cells)
	}
	// … and the dashboard's learner list: learner one 1 task done, learner two 0.
	ins.open("/instructor?lang=en")
	done := eval[[]string](ins, `Array.from(document.querySelectorAll('[data-testid=learner-tasks]')).map(e => e.textContent.trim()).sort()`)
	if strings.Join(done, ",") != "0,2" {
		t.Errorf("dashboard tasks done per learner %q, want 0 and 2", done)
	}
}
