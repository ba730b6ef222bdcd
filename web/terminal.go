package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/coder/websocket"

	"github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/views"
)

// A learner's terminal (GET /api/terminal, a WebSocket): a shell as the
// ordinary user learner (uid 1000) in the learner's own Soft-RoCE guest, never on this host and never in the
// guests that run the shared experiments (terminals/terminal). The
// library is github.com/coder/websocket: small, context-aware, maintained,
// no dependencies.
//
// Frames: the server sends the shell's output as binary frames and its own
// news as text JSON ({"t":"status"|"error"|"exit","msg":…}); the browser
// sends {"t":"in","d":"keys"} and {"t":"size","rows":R,"cols":C}.

// terminalSegment is the ::terminal widget: closed until the learner opens
// it (a guest is started only on demand).
func (s *Server) terminalSegment(lr *lessonRequest) templ.Component {
	t := tr(lr.Lang)
	w := views.TerminalWidget{Title: t("term.title"), Lede: trf(lr.Lang, "term.lede", minutesSpan(lr.Lang, s.reclaimsAfter())), Open: t("term.open"), Keys: t("term.keys"), InputLabel: t("term.input"), TooMuch: t("term.toomuch"),
		NoScript: t("term.noscript"), Closed: t("term.closed"), Endpoint: terminalEndpoint(lr),
		Reset: t("term.reset"), ResetConfirm: t("term.resetconfirm"), ResetDone: t("term.resetdone"), ResetFailed: t("term.resetfailed")}
	if s.cfg.Terminals == nil {
		w.Unavailable = t("term.off")
	} else {
		w.InUse = s.terminalsInUse(lr.Lang)
		if d := s.keepsFor(); d > 0 {
			w.Lede = trf(lr.Lang, "term.lede.kept", minutesSpan(lr.Lang, s.reclaimsAfter()), keepSpan(lr.Lang, d))
		}
	}
	return views.Terminal(w)
}

// terminalsInUse is "n of max machines in use" (and the queue) in lang.
func (s *Server) terminalsInUse(lang string) string {
	n, max := s.cfg.Terminals.InUse()
	msg := trf(lang, "term.inuse", n, max)
	if w := s.cfg.Terminals.Waiting(); w > 0 {
		msg += trf(lang, "term.inqueue", w)
	}
	return msg
}

// labTerminals is the learner terminals' use for /lab and /api/lab; nil
// when they are off.
type labTerminals struct {
	InUse   int `json:"in_use"`
	Max     int `json:"max"`
	Waiting int `json:"waiting"`
}

func (s *Server) labTerminals() *labTerminals {
	if s.cfg.Terminals == nil {
		return nil
	}
	n, max := s.cfg.Terminals.InUse()
	return &labTerminals{InUse: n, Max: max, Waiting: s.cfg.Terminals.Waiting()}
}

// termQueueText tells a waiting learner their place.
func termQueueText(lang string, q rdmalab.TermQueue) string {
	if lang == "zh" {
		return trf(lang, "term.queue", q.InUse, q.Max, q.Position)
	}
	return trf(lang, "term.queue", q.InUse, q.Max, ordinal(q.Position))
}

// ordinal is 1st, 2nd, 3rd, 4th … 11th, 12th, 13th, 21st.
func ordinal(n int) string {
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return strconv.Itoa(n) + suffix
}

type termMsg struct {
	T    string `json:"t"`
	D    string `json:"d,omitempty"`
	Rows uint16 `json:"rows,omitempty"`
	Cols uint16 `json:"cols,omitempty"`
	Msg  string `json:"msg,omitempty"`
	Pos  int    `json:"pos,omitempty"` // status: the place in the queue
	// InUse, on status frames: the widget's "n of max machines in use"
	// line as it is now (the page's copy is from when it loaded).
	InUse string `json:"inuse,omitempty"`
	// Note, on the attach's status frame: what became of the learner's
	// kept machine (restored, or fresh and why), in their language.
	Note string `json:"note,omitempty"`
}

func (s *Server) terminal(w http.ResponseWriter, r *http.Request) {
	lang := page.LangOf(r)
	if s.cfg.Terminals == nil {
		http.Error(w, tr(lang)("term.off"), http.StatusServiceUnavailable)
		return
	}
	if crossOriginUpgrade(r) != nil { // cross_origin.go
		http.Error(w, "cross-origin terminal refused", http.StatusForbidden)
		return
	}
	// Only a learner who already has the cookie: withLearner would make a
	// new id for a request without one, and a shell needs a known learner.
	c, err := r.Cookie(learnerCookie)
	if err != nil || s.cookieLearner(c.Value) == "" || s.cookieLearner(c.Value) != learnerID(r) {
		http.Error(w, "no learner cookie", http.StatusForbidden)
		return
	}
	learner := learnerID(r)
	rows, cols := dim(r.URL.Query().Get("rows"), 24), dim(r.URL.Query().Get("cols"), 80)
	leave, refusal := s.termAdmit(r, learner, lang) // terminal_fair.go
	ws, err := websocket.Accept(w, r, nil)          // nil options: the library refuses other origins too
	if err != nil {
		if leave != nil {
			leave()
		}
		return
	}
	defer ws.CloseNow()
	if refusal != "" {
		s.terminalRefused() // metrics: observe.go
		// Said in a frame: a browser cannot read a refused upgrade's body.
		b, _ := json.Marshal(termMsg{T: "error", Msg: refusal})
		wctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		_ = ws.Write(wctx, websocket.MessageText, b)
		cancel()
		ws.Close(websocket.StatusTryAgainLater, "limit")
		return
	}
	defer leave()
	ws.SetReadLimit(64 << 10)
	// ctx ends when the browser goes (the reader below sees the close):
	// a learner who leaves while waiting leaves the queue.
	// The machine remembers the admission's client: a kept machine counts
	// against its address's share (terminal.Keep.ClientMax).
	ctx, cancel := context.WithCancel(rdmalab.WithClient(r.Context(), page.AddrKey(page.ClientAddr(r))))
	defer cancel()
	send := func(m termMsg) error {
		b, _ := json.Marshal(m)
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return ws.Write(wctx, websocket.MessageText, b)
	}
	// Keystrokes and sizes from the browser, from the start: before the
	// shell is there they are kept (tabInput).
	in := &tabInput{rows: rows, cols: cols, say: func(key string) { _ = send(termMsg{T: "status", Msg: tr(lang)(key)}) }}
	go func() {
		defer cancel()
		for {
			typ, b, err := ws.Read(ctx)
			if err != nil {
				return
			}
			var m termMsg
			if typ != websocket.MessageText || json.Unmarshal(b, &m) != nil {
				continue
			}
			switch m.T {
			case "in":
				if m.D != "" {
					in.keys([]byte(m.D))
				}
			case "size":
				in.size(m.Rows, m.Cols)
			}
		}
	}()
	// A ping every 30 s: proxies close a WebSocket silent for 60 s (nginx's
	// default), and a learner waiting in the queue or an idle shell is.
	go func() {
		tick := time.NewTicker(30 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
				_ = ws.Ping(pctx)
				cancel()
			}
		}
	}()
	note := "" // said with the shell once it is there
	for lost := 0; ; lost++ {
		a, err := s.attachTerminal(ctx, learner, lang, r.URL.Query().Get("lesson"), send, in, lost > 0)
		if err != nil {
			if ctx.Err() == nil {
				ws.Close(websocket.StatusTryAgainLater, "unavailable")
			}
			return
		}
		ended := s.streamTerminal(ctx, ws, send, a, lang, note)
		if !ended || !a.Lost() || lost == 2 {
			break
		}
		// The machine the shell lived on (a worker) was lost: say so and
		// place a new one elsewhere (at most twice in one tab).
		s.log.Warn("terminal: the learner's machine was lost; a new one is placed", "learner", learner)
		note = tr(lang)("term.lost.new")
		in.detach()
	}
	if ctx.Err() == nil {
		_ = send(termMsg{T: "exit", Msg: tr(lang)("term.exited")})
		ws.Close(websocket.StatusNormalClosure, "")
	}
}

// attachTerminal attaches learner's shell for the WebSocket handler,
// telling the tab its place in the queue, and makes it the one keystrokes
// go to (in). again: a new machine after a lost one. lesson
// (the page's slug, or ""): its task setups run first. A failure is said
// to the tab and ends the socket.
func (s *Server) attachTerminal(ctx context.Context, learner, lang, lesson string, send func(termMsg) error, in *tabInput, again bool) (rdmalab.TermConn, error) {
	msg := tr(lang)("term.starting")
	if again {
		msg = tr(lang)("term.lost")
	}
	_ = send(termMsg{T: "status", Msg: msg})
	queued := false
	r0, c0 := in.dims()
	a, err := s.cfg.Terminals.Attach(ctx, learner, r0, c0, func(q rdmalab.TermQueue) {
		queued = true
		_ = send(termMsg{T: "status", Msg: termQueueText(lang, q), Pos: q.Position, InUse: s.terminalsInUse(lang)})
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, err // the browser went away while waiting
		}
		msg := trf(lang, "term.failed", err.Error())
		if fe, ok := errors.AsType[*rdmalab.TermsFullError](err); ok {
			s.terminalRefused() // metrics: observe.go
			msg = trf(lang, "term.full", fe.Max)
			if fe.Waiting > 0 {
				msg = trf(lang, "term.queuefull", fe.Max, fe.Waiting)
			}
		}
		_ = send(termMsg{T: "error", Msg: msg})
		return nil, err
	}
	if lesson != "" {
		// before keystrokes are taken (in is not attached yet): terminal_setup.go
		s.runTaskSetups(ctx, learner, lesson, lang, func(m string) { _ = send(termMsg{T: "status", Msg: m}) })
	}
	if queued {
		s.log.Info("terminal: a learner waited in the queue", "learner", learner)
	}
	in.attach(a, r0, c0)
	return a, nil
}

// streamTerminal sends a's output to the tab until it ends; ended is
// false when the tab went or could not be written to. note (if not "")
// is said once the shell is there, before what became of a kept machine.
func (s *Server) streamTerminal(ctx context.Context, ws *websocket.Conn, send func(termMsg) error, a rdmalab.TermConn, lang, note string) (ended bool) {
	defer a.Detach()
	stop := context.AfterFunc(ctx, a.Detach) // the browser went: end the output loop
	defer stop()
	if k := keptText(lang, a.KeptNote()); k != "" {
		note = strings.TrimSpace(note + " " + k)
	}
	_ = send(termMsg{T: "status", Msg: "", InUse: s.terminalsInUse(lang), Note: note})
	if b := a.Recent(); len(b) > 0 {
		if err := ws.Write(ctx, websocket.MessageBinary, b); err != nil {
			return false
		}
	}
	for b := range a.Output() {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := ws.Write(wctx, websocket.MessageBinary, b)
		cancel()
		if err != nil {
			return false
		}
	}
	return ctx.Err() == nil
}

func dim(s string, def uint16) uint16 {
	n, err := strconv.Atoi(s)
	if err != nil || n < 2 || n > 500 {
		return def
	}
	return uint16(n)
}

var terminalStrings = page.Table{
	"zh": {
		"term.title":            "终端：你自己的 Soft-RoCE 虚拟机",
		"term.lede.kept":        "这是一台只属于你的虚拟机（不是服务器本身，也不是运行共享实验的虚拟机），你在里面是普通用户 learner，里面有 rxe0 和 rxe1。%s没有按键（或有人排队时关掉页面 2 分钟后），它会被收起：文件和命令历史会保存下来，%s内你回来时原样恢复（正在运行的程序会结束）。",
		"term.reset":            "重置我的虚拟机",
		"term.resetconfirm":     "重置后你的虚拟机从头开始：里面的文件和命令历史都会删除。确定要重置吗？",
		"term.resetdone":        "你的虚拟机已重置，这是一台全新的虚拟机。",
		"term.resetfailed":      "重置没有成功，请稍后再试。",
		"term.kept.restored":    "你的虚拟机已恢复成你离开时的样子：文件和命令历史都在，之前运行的程序已结束。要从头开始，请点「重置我的虚拟机」。",
		"term.kept.unreadable":  "你保存的虚拟机无法恢复（保存的状态已损坏），这是一台全新的虚拟机。",
		"term.kept.toobig":      "你上次的虚拟机超过了可保存的大小上限，没有保存下来；这是一台全新的虚拟机。",
		"term.kept.stale":       "实验室在你离开后升级了，之前保存的虚拟机不能再用；这是一台全新的虚拟机。",
		"term.lede":             "这是一台只属于你的虚拟机（不是服务器本身，也不是运行共享实验的虚拟机），你在里面是普通用户 learner，里面有 rxe0 和 rxe1。%s没有按键它就会被回收；有人排队等虚拟机时，关掉页面 2 分钟后也会被回收。",
		"term.open":             "打开终端",
		"term.input":            "终端输入：你的 Soft-RoCE 虚拟机里的 shell",
		"term.toomuch":          "输出太多，来不及逐条朗读：请逐行浏览终端来阅读。",
		"term.keys":             "键盘：终端里的 Tab 交给 shell（命令补全）；要离开终端，先按 Esc 再按 Tab（或 Shift+Tab）。",
		"term.starting":         "正在启动你的虚拟机……",
		"term.full":             "所有 %d 个终端都在使用中，请过几分钟再试。",
		"term.failed":           "终端打不开：%s",
		"term.exited":           "shell 已退出；重新打开会得到一个新的 shell。",
		"term.keys.early":       "机器启动期间你输入的内容太多，超出 4 KiB 的部分没有送到 shell，请重新输入。",
		"term.keys.dropped":     "有些按键没有送到：shell 没有在读取输入（也许前台程序不读键盘）。按 Ctrl-C 结束它，再重新输入。",
		"term.lost":             "运行你终端的那台机器出了故障（不再应答，或越过了限制），原来的 shell 已经结束，里面的文件也没有了。正在另一台机器上为你启动新的虚拟机……",
		"term.lost.new":         "这是另一台机器上的新虚拟机：原来那台机器出了故障，之前的 shell 和文件都随它丢失了。",
		"term.closed":           "连接已断开。",
		"term.off":              "这个实验室没有开启学员终端。",
		"term.noscript":         "终端需要 JavaScript。",
		"term.inuse":            "学员终端：%d / %d 台虚拟机在使用中。",
		"term.inqueue":          "排队：%d 人。",
		"term.queue":            "%d / %d 个终端在使用中，你排在第 %v 位。一有空位你的虚拟机就会启动，请保持本页打开。",
		"term.queuefull":        "所有 %d 个终端都在使用中，排队也已满（%d 人在等）；请过几分钟再试。",
		"term.addrfull":         "你这个网络地址占用的终端（在用或排队）已达一个地址的上限 %d 个；请先关掉其中一个再打开。如果整个班级共用一个地址，请管理员查看 docs/operations.md 中的“限制”一节。",
		"term.tabs":             "你的终端已经在 %d 个标签页里打开了；请先关掉一个。",
		"lab.terminals":         "学员终端（在用 / 上限）",
		"lab.terminals.n":       "%d / %d",
		"lab.terminals.waiting": "，排队 %d 人",
	},
	"en": {
		"term.title":            "Terminal: your own Soft-RoCE machine",
		"term.lede.kept":        "A virtual machine that is yours alone (not the server, not the guests that run the shared experiments); you are the ordinary user learner in it, with rxe0 and rxe1. After %s without a keystroke (or 2 minutes after you close its page while others wait) it is put away: your files and shell history are saved and come back as they were when you return within %s (programs you had running are ended).",
		"term.reset":            "Reset my machine",
		"term.resetconfirm":     "Reset your machine? It starts clean: your files and shell history in it are deleted.",
		"term.resetdone":        "Your machine was reset: this is a fresh one.",
		"term.resetfailed":      "The reset did not work; try again in a moment.",
		"term.kept.restored":    "Your machine is back as you left it: your files and shell history are there; programs you had running were ended. To start clean, press “Reset my machine”.",
		"term.kept.unreadable":  "Your saved machine could not be restored (its saved state is damaged); this is a fresh machine.",
		"term.kept.toobig":      "Your last machine was over the size a saved machine may take, so it was not kept; this is a fresh machine.",
		"term.kept.stale":       "The lab was upgraded since your machine was saved, so it cannot be restored; this is a fresh machine.",
		"term.lede":             "A virtual machine that is yours alone (not the server, not the guests that run the shared experiments); you are the ordinary user learner in it, with rxe0 and rxe1. It is discarded after %s without a keystroke, or 2 minutes after you close its page while others wait for a machine.",
		"term.open":             "Open the terminal",
		"term.input":            "Terminal input: the shell of your Soft-RoCE machine",
		"term.toomuch":          "Too much output to read out: move through the terminal's rows to read it.",
		"term.keys":             "Keyboard: in the terminal, Tab goes to the shell (completion); to leave the terminal, press Esc, then Tab (or Shift+Tab).",
		"term.starting":         "Starting your machine…",
		"term.full":             "All %d terminals are in use; try again in a few minutes.",
		"term.failed":           "The terminal could not open: %s",
		"term.exited":           "The shell exited; open the terminal again for a new one.",
		"term.keys.early":       "You typed more than 4 KiB while the machine started: what went beyond it did not reach the shell. Please type it again.",
		"term.keys.dropped":     "Some keys did not arrive: the shell is not reading its input (perhaps the program in front does not read the keyboard). Press Ctrl-C to end it, then type again.",
		"term.lost":             "The machine your terminal ran on failed (it stopped answering, or broke a limit): that shell has ended and its files are gone. Starting a new machine for you on another one…",
		"term.lost.new":         "This is a new machine on another computer: the one your terminal ran on failed, and the shell and files you had there went with it.",
		"term.closed":           "The connection was closed.",
		"term.off":              "Learner terminals are not enabled on this lab.",
		"term.noscript":         "The terminal needs JavaScript.",
		"term.inuse":            "Learner terminals: %d of %d machines in use.",
		"term.inqueue":          " Waiting: %d.",
		"term.queue":            "%d of %d terminals in use; you are %v in line. Your machine starts as soon as a place frees: keep this page open.",
		"term.queuefull":        "All %d terminals are in use and the queue is full (%d waiting); try again in a few minutes.",
		"term.addrfull":         "Your network address already holds as many terminals as one address may (%d, in use or waiting); close one first. If a whole class shares one address, the lab admin can raise the limit (docs/operations.md, \"Limits\").",
		"term.tabs":             "Your terminal is already open in %d tabs; close one first.",
		"lab.terminals":         "Learner terminals (in use / max)",
		"lab.terminals.n":       "%d / %d",
		"lab.terminals.waiting": ", %d waiting",
	},
}

// keptText is what the learner is told about their kept machine on attach
// ("" when nothing was kept).
func keptText(lang, note string) string {
	switch note {
	case "restored", "unreadable", "stale", "evicted", "share": // evicted, share: lab_class.go
		return tr(lang)("term.kept." + note)
	case "too-big":
		return tr(lang)("term.kept.toobig")
	}
	return ""
}

// minutesSpan is d in whole minutes (at least 1) in lang: "10 分钟",
// "10 minutes".
func minutesSpan(lang string, d time.Duration) string {
	n := max(1, int((d+30*time.Second)/time.Minute))
	if lang == "zh" {
		return strconv.Itoa(n) + " 分钟"
	}
	if n == 1 {
		return "a minute"
	}
	return strconv.Itoa(n) + " minutes"
}

// keepSpan is how long a machine is kept, in days or hours, in lang.
func keepSpan(lang string, d time.Duration) string {
	if d >= 24*time.Hour {
		n := int((d + 12*time.Hour) / (24 * time.Hour))
		if lang == "zh" {
			return strconv.Itoa(n) + " 天"
		}
		if n == 1 {
			return "a day"
		}
		return strconv.Itoa(n) + " days"
	}
	n := max(1, int((d+30*time.Minute)/time.Hour))
	if lang == "zh" {
		return strconv.Itoa(n) + " 小时"
	}
	if n == 1 {
		return "an hour"
	}
	return strconv.Itoa(n) + " hours"
}

// terminalReset is POST /api/terminal/reset: the learner's machine ends
// and nothing of it is kept; their next attach gets a fresh one.
func (s *Server) terminalReset(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Terminals == nil {
		s.WriteError(w, r, page.Errorf(page.CodeUnavailable, tr(page.LangOf(r))("term.off")))
		return
	}
	c, err := r.Cookie(learnerCookie)
	if err != nil || s.cookieLearner(c.Value) == "" || s.cookieLearner(c.Value) != learnerID(r) {
		s.WriteError(w, r, page.Errorf(page.CodeForbidden, "no learner cookie"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
	defer cancel()
	if err := s.cfg.Terminals.Reset(ctx, learnerID(r)); err != nil {
		s.WriteError(w, r, page.Errorf(page.CodeUnavailable, tr(page.LangOf(r))("term.resetfailed")))
		return
	}
	page.WriteJSON(w, http.StatusOK, map[string]string{"msg": tr(page.LangOf(r))("term.resetdone")})
}
