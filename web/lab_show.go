package web

import (
	"context"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/views"
)

// LabSource reports where RDMA experiments run and in what state: the RDMA
// backend (the Soft-RoCE guest, the host's devices, or none).
type LabSource interface {
	Lab(ctx context.Context) sandbox.Lab
}

// lab is the current lab state; a server without an RDMA backend says so.
func (s *Server) lab(ctx context.Context) sandbox.Lab {
	if s.cfg.Lab == nil {
		return sandbox.Lab{Backend: "none", State: sandbox.LabNone, Devices: []sandbox.Device{},
			Reason: sandbox.Text{"en": "this server was started without an RDMA backend", "zh": "本服务器启动时没有配置 RDMA 后端"}}
	}
	l := s.cfg.Lab.Lab(ctx)
	if l.Devices == nil {
		l.Devices = []sandbox.Device{}
	}
	return l
}

// labJSON is GET /api/lab: {backend, state, reason (English), reasons
// (zh, en), reason_text and status_text (in the learner's language), kernel,
// accel, devices}.
func (s *Server) labJSON(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store") // counters change all the time
	l := s.lab(r.Context())
	lang := page.LangOf(r)
	page.WriteJSON(w, http.StatusOK, struct {
		sandbox.Lab
		Reason     string        `json:"reason,omitempty"` // English, as before reasons came in both languages
		StatusText string        `json:"status_text"`      // the state in one line, in the learner's language
		ReasonText string        `json:"reason_text,omitempty"`
		Terminals  *labTerminals `json:"terminals,omitempty"` // learner terminals (terminal.go); absent when off
	}{l, l.Reason.Get("en"), l.Status().Get(lang), l.Reason.Get(lang), s.labTerminals()})
}

// labPage is GET /lab: the same for people, with the counters as a table.
func (s *Server) labPage(w http.ResponseWriter, r *http.Request) {
	l := s.lab(r.Context())
	lang := page.LangOf(r)
	t := tr(lang)
	v := views.LabView{
		Chrome:  s.Chrome(r, t("lab.title")),
		Backend: l.Backend, State: string(l.State), Status: l.Status().Get(lang), Reason: l.Reason.Get(lang),
		Kernel: l.Kernel, Accel: l.Accel, Refresh: l.State == "booting",
	}
	v.Use(views.TableAssets) // the device and counter tables
	v.Guests, v.GuestsReady = l.Guests, l.GuestsReady
	if lt := s.labTerminals(); lt != nil {
		v.Terminals = trf(lang, "lab.terminals.n", lt.InUse, lt.Max)
		if lt.Waiting > 0 {
			v.Terminals += trf(lang, "lab.terminals.waiting", lt.Waiting)
		}
		v.Terminals += s.labTerminalSizing(lang) // lab_class.go
		v.Spares, v.Kept = s.labSpares(lang)
	}
	v.Crowd = s.labCrowdWarning(lang)
	for _, w := range l.Workers {
		v.Workers = append(v.Workers, views.LabWorker{Name: w.Name, Backend: w.Backend, Accel: w.Accel,
			Devices: strings.Join(w.Devices, ", "), Slots: w.Slots, Running: w.Running, CPUs: w.CPUs,
			Load: strconv.FormatFloat(w.Load1, 'f', 2, 64)})
	}
	switch l.Backend {
	case "vm", "host", "none":
		v.Note = t("lab.note." + l.Backend)
	}
	names := map[string]bool{}
	for _, d := range l.Devices {
		v.Devices = append(v.Devices, views.LabDevice{Name: d.Name, Netdev: d.Netdev, GID: d.GID, GIDIndex: d.GIDIndex})
		for k := range d.Counters {
			names[k] = true
		}
	}
	keys := make([]string, 0, len(names))
	for k := range names {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		c := views.LabCounter{Name: k}
		for _, d := range l.Devices {
			c.Values = append(c.Values, d.Counters[k])
		}
		v.Counters = append(v.Counters, c)
	}
	s.Render(w, r, http.StatusOK, views.LabPage(v))
}
