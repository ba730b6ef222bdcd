package web

import (
	"fmt"
	"net/http"
	"regexp"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/capture"
	"github.com/rdmalab/rdmalab/web/page"
)

// runCaptureJSON is GET /api/runs/{id}/capture: the packets a run captured
// (sandbox.Capture in its "capture" event), decoded for the packet list —
// each with its header fields, their byte ranges and the frame in hex.
type runCaptureJSON struct {
	Iface   string            `json:"iface"`
	Count   int               `json:"count"`
	Dropped int               `json:"dropped,omitempty"`
	Hosts   map[string]string `json:"hosts,omitempty"`
	Pcap    string            `json:"pcap"` // download URL
	Packets []capture.Packet  `json:"packets"`
}

// runCapture is GET /api/runs/{id}/capture. Like the run itself, a capture
// can be shared by the run's unguessable link.
func (s *Server) runCapture(w http.ResponseWriter, r *http.Request) {
	run, c, err := s.loadCapture(r)
	if err != nil {
		s.WriteError(w, r, err)
		return
	}
	// hosts are named in the page's language ("rxe1（请求方）" in zh)
	hosts := c.HostsIn(page.LangOf(r))
	ps, err := capture.Decode(c.Pcap, hosts)
	if err != nil {
		s.WriteError(w, r, err)
		return
	}
	page.WriteJSON(w, http.StatusOK, runCaptureJSON{Iface: c.Iface, Count: len(ps), Dropped: c.Dropped, Hosts: hosts,
		Pcap: "/api/runs/" + run + "/capture.pcap", Packets: ps})
}

// runCapturePcap is GET /api/runs/{id}/capture.pcap: the stored capture as
// the classic pcap file Wireshark and tshark open.
func (s *Server) runCapturePcap(w http.ResponseWriter, r *http.Request) {
	run, c, err := s.loadCapture(r)
	if err != nil {
		s.WriteError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/vnd.tcpdump.pcap")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="rdmalab-%s.pcap"`, safeName.ReplaceAllString(run, "_")))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(c.Pcap)
}

var safeName = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// loadCapture finds the run's capture event (the last, if several).
func (s *Server) loadCapture(r *http.Request) (string, *sandbox.Capture, error) {
	run, err := s.loadRun(r)
	if err != nil {
		return "", nil, err
	}
	evs, err := s.cfg.Store.RunEvents(r.Context(), run.ID, 0, 0)
	if err != nil {
		return "", nil, err
	}
	var c *sandbox.Capture
	for _, ev := range evs {
		if ev.Type == sandbox.EvCapture && ev.Capture != nil {
			c = ev.Capture
		}
	}
	if c == nil {
		return "", nil, page.Errorf(page.CodeNotFound, "run "+run.ID+" captured no packets")
	}
	return run.ID, c, nil
}
