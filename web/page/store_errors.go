package page

import (
	"net/http"

	"github.com/go-chi/chi/v5/middleware"

	"github.com/rdmalab/rdmalab/store"
)

// storeErrorStrings are the words of a database that cannot take a write.
var storeErrorStrings = Table{
	"zh": {
		"error.503.title": "实验室暂时忙不过来",
		"store.busy":      "实验室的数据库正被另一个程序锁住，这次操作没有保存：请稍后再试。",
		"store.full":      "实验室服务器的磁盘已满，这次操作没有保存。请告诉实验室管理员。",
	},
	"en": {
		"error.503.title": "The lab is busy",
		"store.busy":      "The lab's database is locked by another program; nothing was saved. Please try again in a moment.",
		"store.full":      "The lab server's disk is full; nothing was saved. Please tell the lab's administrator.",
	},
}

// StoreUnavailable turns a database that cannot take a write right now
// (locked by another process past busy_timeout, or a full disk) into a
// 503 that tells the learner their action was not saved — rather than an
// anonymous internal error. It returns nil for any other error. The cause
// is logged: the admin must see a full disk.
func (s *Base) StoreUnavailable(w http.ResponseWriter, r *http.Request, err error) *Error {
	key := ""
	switch {
	case store.IsBusy(err):
		key = "store.busy"
		w.Header().Set("Retry-After", "5")
	case store.IsFull(err):
		key = "store.full"
	default:
		return nil
	}
	s.Log.Error("database unavailable", "req", middleware.GetReqID(r.Context()), "path", r.URL.Path, "err", err)
	return &Error{Code: CodeUnavailable, Message: s.Strings.Tr(LangOf(r))(key), Err: err}
}
