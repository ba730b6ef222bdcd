package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/a-h/templ"
	"github.com/coder/websocket"

	"github.com/rdmalab/rdmalab/web/views"
)

// A learner's terminal (GET /api/terminal, a WebSocket): a root shell in
// the learner's own Soft-RoCE guest, never on this host and never in the
// guests that run the shared experiments (sandbox/vm/terminal.go). The
// library is github.com/coder/websocket: small, context-aware, maintained,
// no dependencies.
//
// Frames: the server sends the shell's output as binary frames and its own
// news as text JSON ({"t":"status"|"error"|"exit","msg":…}); the browser
// sends {"t":"in","d":"keys"} and {"t":"size","rows":R,"cols":C}.

// Terminals is the lab's learner guests (cmd/labserver adapts *vm.Terminals).
type Terminals interface {
	// Attach returns learner's shell, starting their guest if needed; over
	// the cap it returns a *TerminalsFullError.
	Attach(ctx context.Context, learner string, rows, cols uint16) (TermAttachment, error)
	InUse() (n, max int)
}

// TermAttachment is one tab's view of a learner's shell.
type TermAttachment interface {
	Recent() []byte          // the output before this attach (bounded)
	Output() <-chan []byte   // later output; closed when the shell or the view ends
	Write(keys []byte) error // keystrokes
	Resize(rows, cols uint16) error
	Detach()
}

// TerminalsFullError: every learner guest is taken.
type TerminalsFullError struct{ Max int }

func (e *TerminalsFullError) Error() string { return "all terminals are in use" }

// terminalSegment is the ::terminal widget: closed until the learner opens
// it (a guest is started only on demand).
func (s *Server) terminalSegment(lr *lessonRequest) templ.Component {
	t := tr(lr.Lang)
	w := views.TerminalWidget{Title: t("term.title"), Lede: t("term.lede"), Open: t("term.open"),
		NoScript: t("term.noscript"), Closed: t("term.closed"), Endpoint: "/api/terminal"}
	if s.cfg.Terminals == nil {
		w.Unavailable = t("term.off")
	} else {
		n, max := s.cfg.Terminals.InUse()
		w.InUse = trf(lr.Lang, "term.inuse", n, max)
	}
	return views.Terminal(w)
}

type termMsg struct {
	T    string `json:"t"`
	D    string `json:"d,omitempty"`
	Rows uint16 `json:"rows,omitempty"`
	Cols uint16 `json:"cols,omitempty"`
	Msg  string `json:"msg,omitempty"`
}

func (s *Server) terminal(w http.ResponseWriter, r *http.Request) {
	lang := langOf(r)
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
	ws, err := websocket.Accept(w, r, nil) // nil options: the library refuses other origins too
	if err != nil {
		return
	}
	defer ws.CloseNow()
	ws.SetReadLimit(64 << 10)
	ctx := r.Context()
	send := func(m termMsg) error {
		b, _ := json.Marshal(m)
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return ws.Write(wctx, websocket.MessageText, b)
	}
	_ = send(termMsg{T: "status", Msg: tr(lang)("term.starting")})
	actx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	a, err := s.cfg.Terminals.Attach(actx, learner, rows, cols)
	cancel()
	if err != nil {
		msg := trf(lang, "term.failed", err.Error())
		if fe, ok := errors.AsType[*TerminalsFullError](err); ok {
			msg = trf(lang, "term.full", fe.Max)
		}
		_ = send(termMsg{T: "error", Msg: msg})
		ws.Close(websocket.StatusTryAgainLater, "unavailable")
		return
	}
	defer a.Detach()
	_ = send(termMsg{T: "status", Msg: ""})
	if b := a.Recent(); len(b) > 0 {
		if err := ws.Write(ctx, websocket.MessageBinary, b); err != nil {
			return
		}
	}
	// Keystrokes and sizes from the browser.
	go func() {
		defer a.Detach() // ends the output loop below
		for {
			typ, b, err := ws.Read(ctx)
			if err != nil {
				return
			}
			if typ != websocket.MessageText {
				continue
			}
			var m termMsg
			if json.Unmarshal(b, &m) != nil {
				continue
			}
			switch m.T {
			case "in":
				if m.D != "" {
					_ = a.Write([]byte(m.D))
				}
			case "size":
				_ = a.Resize(m.Rows, m.Cols)
			}
		}
	}()
	for b := range a.Output() {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := ws.Write(wctx, websocket.MessageBinary, b)
		cancel()
		if err != nil {
			return
		}
	}
	if ctx.Err() == nil {
		_ = send(termMsg{T: "exit", Msg: tr(lang)("term.exited")})
		ws.Close(websocket.StatusNormalClosure, "")
	}
}

func dim(s string, def uint16) uint16 {
	n, err := strconv.Atoi(s)
	if err != nil || n < 2 || n > 500 {
		return def
	}
	return uint16(n)
}

var terminalStrings = uiTable{
	"zh": {
		"term.title":    "终端：你自己的 Soft-RoCE 虚拟机",
		"term.lede":     "这是一台只属于你的虚拟机（不是服务器本身，也不是运行共享实验的虚拟机），你是其中的 root，里面有 rxe0 和 rxe1。闲置 10 分钟后它会被回收。",
		"term.open":     "打开终端",
		"term.starting": "正在启动你的虚拟机……",
		"term.full":     "所有 %d 个终端都在使用中，请过几分钟再试。",
		"term.failed":   "终端打不开：%s",
		"term.exited":   "shell 已退出；重新打开会得到一个新的 shell。",
		"term.closed":   "连接已断开。",
		"term.off":      "这个实验室没有开启学员终端。",
		"term.noscript": "终端需要 JavaScript。",
		"term.inuse":    "学员终端：%d / %d 台虚拟机在使用中。",
	},
	"en": {
		"term.title":    "Terminal: your own Soft-RoCE machine",
		"term.lede":     "A virtual machine that is yours alone (not the server, not the guests that run the shared experiments); you are root in it, with rxe0 and rxe1. It is discarded after 10 minutes idle.",
		"term.open":     "Open the terminal",
		"term.starting": "Starting your machine…",
		"term.full":     "All %d terminals are in use; try again in a few minutes.",
		"term.failed":   "The terminal could not open: %s",
		"term.exited":   "The shell exited; open the terminal again for a new one.",
		"term.closed":   "The connection was closed.",
		"term.off":      "Learner terminals are not enabled on this lab.",
		"term.noscript": "The terminal needs JavaScript.",
		"term.inuse":    "Learner terminals: %d of %d machines in use.",
	},
}
