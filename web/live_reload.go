package web

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/rdmalab/rdmalab/lessons"
)

// reloadHeartbeat keeps idle reload streams open through proxies.
const reloadHeartbeat = 15 * time.Second

// bootID makes course versions unique per process: a page that reconnects
// to a restarted server (whose version counter restarted) reloads too.
var bootID = func() string {
	var b [4]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}()

// courseToken names a course version for reload.js, followed by a space
// and each lesson's content hash as JSON ({"01-why-rdma":"9f2c…",…}): a
// page reloads only when its own lesson changed (reload.js).
func courseToken(s *lessons.Snapshot) string {
	return fmt.Sprintf("%s-%d %s", bootID, s.Version, lessonHashes(s))
}

// lessonHashes is the JSON map slug → hash of the lesson's rendered pages
// and questions, computed once per course version.
func lessonHashes(s *lessons.Snapshot) string {
	hashMemo.Lock()
	defer hashMemo.Unlock()
	if hashMemo.course == s.Course && hashMemo.json != "" {
		return hashMemo.json
	}
	m := map[string]string{}
	if s.Course != nil {
		for _, l := range s.Course.Lessons {
			h := sha256.New()
			json.NewEncoder(h).Encode(l.Pages) // map keys are sorted: stable
			json.NewEncoder(h).Encode(l.Quiz)
			m[l.Slug] = hex.EncodeToString(h.Sum(nil)[:8])
		}
	}
	b, _ := json.Marshal(m)
	hashMemo.course, hashMemo.json = s.Course, string(b)
	return hashMemo.json
}

var hashMemo struct {
	sync.Mutex
	course *lessons.Course
	json   string
}

// reloadDiag is one error of a failed reload as sent to instructors.
type reloadDiag struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Message string `json:"message"`
}

func reloadDiags(ds []lessons.Diagnostic) []reloadDiag {
	out := make([]reloadDiag, 0, len(ds))
	for _, d := range ds {
		out = append(out, reloadDiag{File: d.File, Line: d.Line, Message: d.Message})
	}
	return out
}

// reloadEvents is GET /api/reload, the live-reload stream (SSE) that
// static/js/reload.js listens to:
//
//	event: state   data: <course token>   first, on every (re)connection
//	event: reload  data: <course token>   the course changed: reload the page
//	               if its lesson changed (token = "version {slug: hash…}")
//	event: errors  data: [{file,line,message}…]  instructors only: the
//	               errors of the last reload ([] when fixed)
//
// Learners never see errors and only reload to a good version. Without live
// reload (the built-in course) it answers 204, which tells EventSource not
// to reconnect.
func (s *Server) reloadEvents(w http.ResponseWriter, r *http.Request) {
	live := s.cfg.Live
	if live == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	instructor := s.instructors.SignedIn(r) // errors go to instructors only

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)

	send := func(event, data string) error {
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data); err != nil {
			return err
		}
		return rc.Flush()
	}
	sendErrors := func(snap *lessons.Snapshot) error {
		b, err := json.Marshal(reloadDiags(snap.Errors))
		if err != nil {
			return err
		}
		return send("errors", string(b))
	}

	ch := live.Changed()
	snap := live.Snapshot()
	hashes := lessonHashes(snap) // of the version this stream last announced
	if err := send("state", courseToken(snap)); err != nil {
		return
	}
	if instructor {
		if err := sendErrors(snap); err != nil {
			return
		}
	}
	tick := time.NewTicker(reloadHeartbeat)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-live.Done(): // server shutting down: let Shutdown finish
			return
		case <-tick.C:
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
				return
			}
			if rc.Flush() != nil {
				return
			}
			continue
		case <-ch:
		}
		ch = live.Changed()
		cur := live.Snapshot()
		if instructor && !slices.Equal(cur.Errors, snap.Errors) {
			if err := sendErrors(cur); err != nil {
				return
			}
		}
		// A learner's page reloads only when a lesson of the course
		// changed: saving a draft (or an image) reloads instructors' pages,
		// the draft previews among them, and no learner's.
		if cur.Version != snap.Version && (instructor || lessonHashes(cur) != hashes) {
			if err := send("reload", courseToken(cur)); err != nil {
				return
			}
			hashes = lessonHashes(cur)
		}
		snap = cur
	}
}
