package web

import (
	"net/http"
	"time"

	"github.com/rdmalab/rdmalab/web/page"
)

// Starting runs is the one thing a learner can do that costs the lab real
// work (a child process or a guest run). The runner allows one active run
// per learner and bounds its queue; these limits stop one client from
// filling that queue: submissions are rate-limited per learner and per
// client address, and one address may hold at most Limits.RunsPerAddr
// queued or running runs (a client that drops its cookie is a new learner
// each time, but not a new address).

// A learner's own request rate being too high is page.CodeRateLimited
// (429); the queue being full for everyone is page.CodeBusy.

var rateLimitStrings = page.Table{
	"zh": {
		"run.err.rate":     "你提交实验太频繁了：请 %d 秒后再试。",
		"run.err.addrfull": "来自你这个网络地址的实验已有 %d 个在排队或运行：请等其中一个结束再提交。",
	},
	"en": {
		"run.err.rate":     "You are starting runs too often: try again in %d s.",
		"run.err.addrfull": "Runs from your network address already queued or running: %d. Wait for one to end before starting another.",
	},
}

// limitRuns is the middleware of both submit routes (POST /api/runs and
// the no-JavaScript POST /runs). It must run after withLearner.
func (s *Server) limitRuns(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		addr := page.AddrKey(page.ClientAddr(r))
		lim := s.limits
		ok, wait := lim.runLearner.allow(learnerID(r))
		if ok {
			ok, wait = lim.runAddr.allow(addr)
		}
		if !ok {
			secs := page.RetryAfter(w, wait)
			s.log.Warn("run rate limit", "addr", addr, "retry_after_s", secs)
			s.refuseWrite(w, r, page.Errorf(page.CodeRateLimited, trf(page.LangOf(r), "run.err.rate", secs)))
			return
		}
		if s.cfg.Runner != nil && lim.active.full(addr, s.runStillGoing) {
			page.RetryAfter(w, 10*time.Second)
			s.log.Warn("runs per address", "addr", addr, "max", s.cfg.Limits.RunsPerAddr)
			s.refuseWrite(w, r, page.Errorf(page.CodeRateLimited, trf(page.LangOf(r), "run.err.addrfull", s.cfg.Limits.RunsPerAddr)))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// runStillGoing reports whether run id is still queued or running.
func (s *Server) runStillGoing(id string) bool {
	info, ok := s.cfg.Runner.Lookup(id)
	return ok && !info.Status.Final()
}

// noteRun counts a submitted run against its client address.
func (s *Server) noteRun(r *http.Request, id string) {
	s.limits.active.add(page.AddrKey(page.ClientAddr(r)), id)
}
