package web

import (
	"net/http"
	"time"

	"github.com/rdmalab/rdmalab/web/page"
)

var writeGuardStrings = page.Table{
	"zh": {
		"limit.writes":       "来自你这个网络地址的请求太频繁了，这次没有保存：请 %d 秒后再试。",
		"limit.new_learners": "来自你这个网络地址的新学员太多了，这次没有保存：请 %d 秒后再试。如果整个班级共用一个地址，请管理员查看 docs/operations.md 中的“限制”一节。",
	},
	"en": {
		"limit.writes":       "Too many requests from your network address; nothing was saved. Try again in %d s.",
		"limit.new_learners": "Too many new learners from your network address; nothing was saved. Try again in %d s. If a whole class shares one address, the lab admin can raise the limit (docs/operations.md, \"Limits\").",
	},
}

// guardWrites bounds what one client address can write: every
// state-changing request counts against the address's write rate, and the
// first write of a learner the database does not know yet (which creates
// the learner's row) against its new-learner rate. A script that drops
// its cookie is a new learner on every request, but not a new address.
// It runs after withLearner and withLang.
func (s *Server) guardWrites(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions {
			next.ServeHTTP(w, r)
			return
		}
		addr := page.AddrKey(page.ClientAddr(r))
		s.crowd.saw(addr, learnerID(r), time.Now()) // /lab warns when a class shares one address (lab_class.go)
		if ok, wait := s.limits.write.allow(addr); !ok {
			secs := page.RetryAfter(w, wait)
			s.log.Warn("write rate limit", "addr", addr, "path", r.URL.Path, "retry_after_s", secs)
			s.refuseWrite(w, r, page.Errorf(page.CodeRateLimited, trf(page.LangOf(r), "limit.writes", secs)))
			return
		}
		known, err := s.cfg.Store.LearnerKnown(r.Context(), learnerID(r))
		if err != nil {
			if e := s.StoreUnavailable(w, r, err); e != nil {
				s.refuseWrite(w, r, e)
				return
			}
			s.InternalError(w, r, err)
			return
		}
		if !known {
			if ok, wait := s.limits.newLearner.allow(addr); !ok {
				secs := page.RetryAfter(w, wait)
				s.log.Warn("new learner limit", "addr", addr, "path", r.URL.Path, "retry_after_s", secs)
				s.refuseWrite(w, r, page.Errorf(page.CodeRateLimited, trf(page.LangOf(r), "limit.new_learners", secs)))
				return
			}
		}
		s.instructors.MarkStaffWrite(r) // an instructor's own writes never count as a learner's (instructor/staff.go)
		next.ServeHTTP(w, r)
	})
}

// refuseWrite answers a refused write in the route's own format: JSON on
// the API, an error page with the reason elsewhere.
func (s *Server) refuseWrite(w http.ResponseWriter, r *http.Request, e *page.Error) {
	if page.IsAPI(r) {
		s.WriteError(w, r, e)
		return
	}
	s.Refused(w, r, e)
}

// mayCreateLearner reports whether a request may write for learner: always
// when the learner has a row already, else within the client address's
// new-learner limit. Reading a lesson records it as opened, which creates
// the learner's row: a script that drops its cookie must not create rows
// without bound by reading either.
func (s *Server) mayCreateLearner(r *http.Request, learner string) bool {
	known, err := s.cfg.Store.LearnerKnown(r.Context(), learner)
	if err != nil || known {
		return true // a database error shows up where the write is tried
	}
	ok, _ := s.limits.newLearner.allow(page.AddrKey(page.ClientAddr(r)))
	return ok
}
