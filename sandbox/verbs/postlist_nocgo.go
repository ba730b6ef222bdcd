//go:build !cgo

package verbs

// MaxPostList is the longest list PostSendList takes in one call.
const MaxPostList = 64

// PostSendList returns ErrNoVerbs.
func (qp *QP) PostSendList(wrs []SendWR) (int, error) { return 0, ErrNoVerbs }
