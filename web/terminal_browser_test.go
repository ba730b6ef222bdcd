package web

import (
	"context"
	"github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/internal/testwait"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/runs/runner"
)

// fakeTerms is a stand-in for the learner guests (terminals/terminal
// has the real-guest test): one "shell" per learner that answers each line
// with "you typed: LINE", keeping its output as scrollback; learners over
// max wait in a FIFO queue of queueMax, as terminal.Terminals does.
type fakeTerms struct {
	mu       sync.Mutex
	max      int
	queueMax int
	sessions map[string]*fakeShell
	waiting  []string
	changed  chan struct{}
}

func (f *fakeTerms) notify() {
	if f.changed != nil {
		close(f.changed)
	}
	f.changed = make(chan struct{})
}

func (f *fakeTerms) dequeue(learner string) {
	if i := slices.Index(f.waiting, learner); i >= 0 {
		f.waiting = slices.Delete(f.waiting, i, i+1)
		f.notify()
	}
}

// discard ends learner's shell: the place goes to the head of the queue.
func (f *fakeTerms) discard(learner string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.sessions, learner)
	f.notify()
}

func (f *fakeTerms) Holds(learner string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sessions[learner] != nil || slices.Contains(f.waiting, learner)
}

func (f *fakeTerms) Waiting() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiting)
}

type fakeShell struct {
	mu     sync.Mutex
	out    []byte
	line   []byte
	subs   []chan []byte
	rows   uint16
	cols   uint16
	opened int
}

type fakeAttach struct {
	s      *fakeShell
	ch     chan []byte
	recent []byte
	once   sync.Once
}

func (f *fakeTerms) Attach(ctx context.Context, learner string, rows, cols uint16, wait func(rdmalab.TermQueue)) (rdmalab.TermConn, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.changed == nil {
		f.notify()
	}
	s := f.sessions[learner]
	if s == nil && (len(f.sessions) >= f.max || len(f.waiting) > 0) {
		if len(f.waiting) >= f.queueMax {
			return nil, &rdmalab.TermsFullError{Max: f.max, Waiting: len(f.waiting)}
		}
		f.waiting = append(f.waiting, learner)
		for f.waiting[0] != learner || len(f.sessions) >= f.max {
			q := rdmalab.TermQueue{Position: slices.Index(f.waiting, learner) + 1, InUse: len(f.sessions), Max: f.max}
			changed := f.changed
			f.mu.Unlock()
			wait(q)
			select {
			case <-ctx.Done():
			case <-changed:
			}
			f.mu.Lock()
			if ctx.Err() != nil {
				f.dequeue(learner)
				return nil, ctx.Err()
			}
		}
		f.dequeue(learner)
	}
	if s == nil {
		s = &fakeShell{out: []byte("root@fake:~# ")}
		f.sessions[learner] = s
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opened++
	s.rows, s.cols = rows, cols
	a := &fakeAttach{s: s, ch: make(chan []byte, 64), recent: append([]byte(nil), s.out...)}
	s.subs = append(s.subs, a.ch)
	return a, nil
}

// Reset ends learner's shell; the fake keeps nothing.
func (f *fakeTerms) Reset(ctx context.Context, learner string) error {
	f.discard(learner)
	return nil
}

// Verify finds no shell to check in (taskTerms scripts verdicts).
func (f *fakeTerms) Verify(context.Context, string, []byte, string) (rdmalab.TaskVerdict, error) {
	return rdmalab.TaskVerdict{}, rdmalab.ErrNoTerminal
}

func (f *fakeTerms) InUse() (int, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.sessions), f.max
}

func (a *fakeAttach) KeptNote() string         { return "" }
func (a *fakeAttach) Lost() bool               { return false }
func (a *fakeAttach) Recent() []byte           { return a.recent }
func (a *fakeAttach) Output() <-chan []byte    { return a.ch }
func (a *fakeAttach) Resize(r, c uint16) error { return nil }
func (a *fakeAttach) Detach() {
	a.once.Do(func() {
		a.s.mu.Lock()
		for i, c := range a.s.subs {
			if c == a.ch {
				a.s.subs = append(a.s.subs[:i], a.s.subs[i+1:]...)
				break
			}
		}
		a.s.mu.Unlock()
		close(a.ch)
	})
}

func (a *fakeAttach) Write(b []byte) error {
	s := a.s
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []byte
	for _, c := range b {
		if c == '\r' {
			out = append(out, []byte("\r\nyou typed: "+string(s.line)+"\r\nroot@fake:~# ")...)
			s.line = nil
			continue
		}
		s.line = append(s.line, c)
		out = append(out, c)
	}
	s.out = append(s.out, out...)
	for _, c := range s.subs {
		select {
		case c <- out:
		default:
		}
	}
	return nil
}

// termText is the text in the terminal's buffer (what xterm.js shows and
// keeps as scrollback).
const termText = `(function(){ var b = document.querySelector(".term"), t = b && b._term; if (!t) return ""; var buf = t.buffer.active, out = []; for (var i = 0; i < buf.length; i++) { var l = buf.getLine(i); if (l) out.push(l.translateToString(true)); } return out.join("\\n"); })()`

// The ::terminal widget: opening it attaches over the WebSocket, keys reach
// the shell and its output shows in xterm.js; a reload re-attaches to the
// same shell with its scrollback; nothing violates the lab's CSP (xterm's
// generated CSS goes through constructed stylesheets); a learner over the
// cap reads the full message.
func TestTerminalWidget(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	widgetCourse(env, lessons.Segment{Kind: lessons.SegTerminal})
	fake := &fakeTerms{max: 1, queueMax: 1, sessions: map[string]*fakeShell{}}
	env.Server.cfg.Terminals = fake
	env.Server.cfg.Limits.TerminalsPerAddr = 3 // the test's learners share loopback
	var mu sync.Mutex
	var csp []string
	page := newBrowserPageListening(t, func(ev any) {
		if e, ok := ev.(*cdplog.EventEntryAdded); ok && e.Entry != nil &&
			(e.Entry.Source == cdplog.EntrySourceSecurity || strings.Contains(e.Entry.Text, "Content Security Policy")) {
			mu.Lock()
			csp = append(csp, e.Entry.Text)
			mu.Unlock()
		}
	})
	if _, err := chromedp.Call(page.ctx, cdplog.Enable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	page.do(chromedp.Navigate(env.HTTP.URL+"/lessons/01-one?lang=en"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=terminal-open]`)))
	if got := page.text(`[data-testid=terminal-inuse]`); !strings.Contains(got, "0 of 1") {
		t.Errorf("in use: %q", got)
	}
	page.do(chromedp.Click(chromedp.CSS(`[data-testid=terminal-open]`)),
		chromedp.WaitReady(chromedp.CSS(`.term-screen .xterm-helper-textarea`)),
		chromedp.Poll[chromedp.Void](termText+`.includes("root@fake")`))
	// Typed as xterm.js's own input (onData, as a key press gives):
	// chromedp's synthetic key events reach xterm twice (keydown with text
	// and a char event).
	page.do(chromedp.Evaluate[chromedp.Void](`document.querySelector(".term")._term.input("ibv_devices\r", true)`))
	page.do(chromedp.Poll[chromedp.Void](termText + `.includes("you typed: ibv_devices")`))

	// The in-use line follows the learner's own open: the page was served
	// with "0 of 1", the shell's status frame brings "1 of 1".
	page.do(chromedp.Poll[chromedp.Void](`document.querySelector("[data-testid=terminal-inuse]").textContent.includes("1 of 1")`))
	if got := page.attr(`.term-screen .xterm-helper-textarea`, "aria-label"); got != "Terminal input: the shell of your Soft-RoCE machine" {
		t.Errorf("the terminal input's accessible name (en): %q", got)
	}
	// Screen-reader mode: the shell's rows are text in xterm.js's
	// accessibility tree (the canvas alone says nothing).
	page.do(chromedp.Poll[chromedp.Void](`(function(){ var t = document.querySelector(".term .xterm-accessibility-tree"); return !!t && t.textContent.includes("you typed: ibv_devices"); })()`))
	if got := page.text(`[data-testid=terminal-keys]`); !strings.Contains(got, "press Esc, then Tab") {
		t.Errorf("keyboard hint: %q", got)
	}

	// A reload re-attaches to the same shell: its scrollback is back, and
	// the keyboard focus stays where the page starts (the learner did not
	// press Open this time).
	page.do(chromedp.Reload(),
		chromedp.Poll[chromedp.Void](termText+`.includes("you typed: ibv_devices")`))
	if in := evalBool(t, page, `!!document.activeElement.closest(".term-screen")`); in {
		t.Errorf("a reload's re-attach pulled the keyboard focus into the terminal")
	}

	// Keyboard only: Tab inside the terminal belongs to the shell; Esc then
	// Tab (or Shift+Tab) leaves it, sending neither key to the shell; an Esc
	// followed by another key reaches the shell, in order.
	inTerm := `!!document.activeElement.closest(".term-screen")`
	page.do(chromedp.Evaluate[chromedp.Void](`document.querySelector(".term")._term.focus()`),
		chromedp.KeyEvent("\t"))
	if !evalBool(t, page, inTerm) {
		t.Errorf("a plain Tab left the terminal (the shell's completion key)")
	}
	page.do(chromedp.KeyEvent(kb.Escape), chromedp.KeyEvent("\t"))
	if evalBool(t, page, inTerm) {
		t.Errorf("Esc then Tab did not leave the terminal: a keyboard trap")
	}
	page.do(chromedp.Evaluate[chromedp.Void](`document.querySelector(".term")._term.focus()`),
		chromedp.KeyEvent(kb.Escape), chromedp.KeyEvent(kb.Shift+"\t"))
	if evalBool(t, page, inTerm) {
		t.Errorf("Esc then Shift+Tab did not leave the terminal")
	}
	page.do(chromedp.Evaluate[chromedp.Void](`document.querySelector(".term")._term.focus()`),
		chromedp.KeyEvent(kb.Escape), chromedp.KeyEvent("b"))
	// The keys travel over the WebSocket: wait (bounded) for the "b"
	// that comes last before judging the whole line.
	var line string
	shellLine := func() string {
		fake.mu.Lock()
		defer fake.mu.Unlock()
		var l string
		for _, sh := range fake.sessions {
			sh.mu.Lock()
			l = string(sh.line)
			sh.mu.Unlock()
		}
		return l
	}
	testwait.For(10*time.Second, 10*time.Millisecond, func() bool { line = shellLine(); return strings.Contains(line, "b") })
	if !strings.HasPrefix(line, "\t\x1bb") || strings.Count(line, "\x1b") != 1 {
		t.Errorf("the shell got %q: want the plain Tab, then Esc b once (and no Esc or Tab from leaving)", line)
	}
	fake.mu.Lock()
	shells, opened := len(fake.sessions), 0
	for _, s := range fake.sessions {
		opened = s.opened
	}
	fake.mu.Unlock()
	if shells != 1 || opened != 2 {
		t.Errorf("after a reload: %d shells, attached %d times; want 1 shell attached twice", shells, opened)
	}

	// Another learner (a fresh browser, no cookie yet) over the cap of 1
	// waits in line, told their place in Chinese; when the first learner's
	// shell goes, they get theirs.
	other := newBrowserPage(t)
	other.do(chromedp.Navigate(env.HTTP.URL+"/lessons/01-one?lang=zh"),
		chromedp.Evaluate[chromedp.Void](`localStorage.clear()`),
		chromedp.Click(chromedp.CSS(`[data-testid=terminal-open]`)),
		chromedp.Poll[chromedp.Void](`document.querySelector("[data-testid=terminal-status]").textContent.includes("1 / 1 个终端在使用中，你排在第 1 位")`))
	if got := other.attr(`.term-screen .xterm-helper-textarea`, "aria-label"); got != "终端输入：你的 Soft-RoCE 虚拟机里的 shell" {
		t.Errorf("the terminal input's accessible name (zh): %q", got)
	}
	page.do(chromedp.Navigate(env.HTTP.URL+"/lessons/01-one?lang=en"),
		chromedp.Poll[chromedp.Void](termText+`.includes("you typed: ibv_devices")`))
	if got := page.text(`[data-testid=terminal-inuse]`); !strings.Contains(got, "1 of 1 machines in use. Waiting: 1.") {
		t.Errorf("in use with one waiting: %q", got)
	}
	// A third learner finds the queue (1 place) full.
	third := newBrowserPage(t)
	third.do(chromedp.Navigate(env.HTTP.URL+"/lessons/01-one?lang=en"),
		chromedp.Evaluate[chromedp.Void](`localStorage.clear()`),
		chromedp.Click(chromedp.CSS(`[data-testid=terminal-open]`)),
		chromedp.Poll[chromedp.Void](`document.querySelector("[data-testid=terminal-status]").textContent.includes("All 1 terminals are in use and the queue is full (1 waiting)")`))
	fake.mu.Lock()
	var first string
	for l := range fake.sessions {
		first = l
	}
	fake.mu.Unlock()
	fake.discard(first)
	other.do(chromedp.Poll[chromedp.Void](termText + `.includes("root@fake")`))
	if n := fake.Waiting(); n != 0 {
		t.Errorf("waiting after the place freed: %d", n)
	}

	// "Reset my machine" (zh): confirmed, the learner's machine is
	// replaced by a fresh one (the fake's shell is new) and the widget
	// says so in the page's language.
	other.do(chromedp.Evaluate[chromedp.Void](`document.querySelector(".term")._term.input("echo hi\r", true)`),
		chromedp.Poll[chromedp.Void](termText+`.includes("you typed: echo hi")`))
	if got := other.text(`[data-testid=terminal-reset]`); got != "重置我的虚拟机" {
		t.Errorf("reset button (zh): %q", got)
	}
	other.do(chromedp.Evaluate[chromedp.Void](`window.confirm = function () { return true; }`),
		chromedp.Click(chromedp.CSS(`[data-testid=terminal-reset]`)),
		chromedp.Poll[chromedp.Void](`document.querySelector("[data-testid=terminal-status]").textContent.includes("你的虚拟机已重置，这是一台全新的虚拟机。")`),
		chromedp.Poll[chromedp.Void](termText+`.includes("root@fake") && !`+termText+`.includes("you typed: echo hi")`))
	fake.mu.Lock()
	for _, sh := range fake.sessions {
		sh.mu.Lock()
		if sh.opened != 1 || len(sh.line) != 0 {
			t.Errorf("after the reset the shell was attached %d times with %q typed; want a fresh one", sh.opened, sh.line)
		}
		sh.mu.Unlock()
	}
	fake.mu.Unlock()

	mu.Lock()
	defer mu.Unlock()
	if len(csp) > 0 {
		t.Errorf("CSP violations:\n%s", strings.Join(csp, "\n"))
	}
}

// newBrowserPageListening is newBrowserPage with a listener on the tab's
// events (the CSP reports of the log domain).
func newBrowserPageListening(t *testing.T, listen func(ev any)) *browserPage {
	t.Helper()
	skipBrowserIfShort(t)
	chrome, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("this test drives Debian's chromium (apt-get install chromium, or make test): ", err)
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox)...)
	ctx, cancelCtx := chromedp.NewContext(alloc, chromedp.WithListener(listen))
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	return &browserPage{t: t, ctx: ctx}
}

// evalBool evaluates a JavaScript condition in p.
func evalBool(t *testing.T, p *browserPage, js string) bool {
	t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[bool](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}
