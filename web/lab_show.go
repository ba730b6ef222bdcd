package web

import (
	"context"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/sandbox"
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
		return sandbox.Lab{Backend: "none", State: sandbox.LabNone, Reason: "this server was started without an RDMA backend", Devices: []sandbox.Device{}}
	}
	l := s.cfg.Lab.Lab(ctx)
	if l.Devices == nil {
		l.Devices = []sandbox.Device{}
	}
	return l
}

// labJSON is GET /api/lab: {backend, state, reason, kernel, accel, devices}.
func (s *Server) labJSON(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store") // counters change all the time
	l := s.lab(r.Context())
	lang := langOf(r)
	writeJSON(w, http.StatusOK, struct {
		sandbox.Lab
		StatusText string        `json:"status_text"` // the state in one line, in the learner's language
		ReasonText string        `json:"reason_text,omitempty"`
		Terminals  *labTerminals `json:"terminals,omitempty"` // learner terminals (terminal.go); absent when off
	}{l, labStatusText(l, lang), sandbox.ReasonText(l.Reason, lang), s.labTerminals()})
}

// labPage is GET /lab: the same for people, with the counters as a table.
func (s *Server) labPage(w http.ResponseWriter, r *http.Request) {
	l := s.lab(r.Context())
	lang := langOf(r)
	t := tr(lang)
	v := views.LabView{
		Chrome:  s.chrome(r, t("lab.title")),
		Backend: l.Backend, State: string(l.State), Status: labStatusText(l, lang), Reason: sandbox.ReasonText(l.Reason, lang),
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
	s.render(w, r, http.StatusOK, views.LabPage(v))
}

// labStatusText is the lab's state in one line in lang (Lab.String is the
// English one, for logs).
func labStatusText(l sandbox.Lab, lang string) string {
	if lang != "zh" {
		return l.String()
	}
	title := "Soft-RoCE 实验环境"
	if l.Backend == "host" {
		title = "RDMA 实验环境（本机）"
	}
	switch l.State {
	case sandbox.LabReady:
		var devs []string
		for _, d := range l.Devices {
			if d.Netdev != "" {
				devs = append(devs, d.Name+" → "+d.Netdev)
			} else {
				devs = append(devs, d.Name)
			}
		}
		var parts []string
		if len(devs) > 0 {
			parts = append(parts, strings.Join(devs, "，"))
		}
		if l.Kernel != "" {
			parts = append(parts, "内核 "+l.Kernel)
		}
		if l.Accel != "" {
			parts = append(parts, strings.ToUpper(l.Accel))
		}
		s := title + "：就绪"
		if len(parts) > 0 {
			s += "（" + strings.Join(parts, "，") + "）"
		}
		return s
	case sandbox.LabBooting:
		return title + "：启动中…"
	case sandbox.LabFailed:
		return title + "：启动失败（服务器会再试）"
	case sandbox.LabNone:
		return title + "：不可用——" + sandbox.ReasonText(l.Reason, "zh")
	}
	return title + "：状态未知"
}
