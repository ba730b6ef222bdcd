package web

import (
	"net/http"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/web/page"
)

var needsStrings = page.Table{
	"zh": {
		"run.err.content_type": "请求体必须是 JSON（Content-Type: application/json）。",
		"run.err.json":         `请求体必须是一个 JSON 对象 {"experiment": "…", "params": {…}}，且没有其他字段。`,
		"run.err.nordma":       "这个实验需要 RDMA 设备，而这台实验室服务器没有启用 RDMA 后端（管理员可以查看 /lab 和 docs/operations.md），所以没有排队。",
	},
	"en": {
		"run.err.content_type": "The body must be JSON (Content-Type: application/json).",
		"run.err.json":         `The body must be one JSON object {"experiment": "…", "params": {…}} with no other fields.`,
		"run.err.nordma":       "This experiment needs an RDMA device and this lab server has no RDMA backend (the admin can see /lab and docs/operations.md), so it was not queued.",
	},
}

// noRDMA refuses, at submission, an experiment that needs RDMA on a server
// whose RDMA backend is none: such a run used to take a queue slot and fail
// only on its turn. A backend that is booting or has failed may still come
// up, so those runs are queued (the run says why it failed, if it does).
// The backend's own reason goes to the log; the learner gets a sentence in
// their language.
func (s *Server) noRDMA(r *http.Request, exp *sandbox.Experiment) *page.Error {
	if exp.Needs != sandbox.NeedRDMA || s.cfg.Lab == nil {
		return nil
	}
	l := s.cfg.Lab.Lab(r.Context())
	if l.State != sandbox.LabNone {
		return nil
	}
	s.log.Warn("RDMA experiment refused: no RDMA backend", "experiment", exp.ID, "reason", l.Reason.Get("en"))
	return page.Errorf(page.CodeUnavailable, tr(page.LangOf(r))("run.err.nordma"))
}
