package rdmaexp

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/expkit"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
)

// Helpers shared by lesson 07's experiments (atomics, write-imm, srq,
// mem-window, async-events, multicast, rxe-limits).

// extraQP is one more RC QP in an existing end's PD, on its CQs: several
// peers can then reach the same MR (the atomics' shared counter).
type extraQP struct {
	qp *verbs.QP
	r  *rc
}

// newExtraQP creates a QP beside r.qp and connects it to remote.
func newExtraQP(r *rc, remote verbs.Endpoint) (*extraQP, error) {
	return newExtraQPOn(r, remote, r.recvCQ, nil)
}

// newExtraQPOn is newExtraQP with its own receive CQ, and its receives
// from srq when srq is not nil.
func newExtraQPOn(r *rc, remote verbs.Endpoint, recvCQ *verbs.CQ, srq *verbs.SRQ) (*extraQP, error) {
	var qp *verbs.QP
	var err error
	if srq != nil {
		qp, err = r.pd.NewQPWithSRQ(r.sendCQ, recvCQ, srq, r.opt.SendWR)
	} else {
		qp, err = r.pd.NewQP(r.sendCQ, recvCQ, verbs.QPCaps{MaxSendWR: r.opt.SendWR, MaxRecvWR: r.opt.RecvWR})
	}
	if err != nil {
		return nil, err
	}
	a, err := r.attr(remote)
	if err != nil {
		qp.Close()
		return nil, err
	}
	for _, s := range []verbs.QPState{verbs.StateInit, verbs.StateRTR, verbs.StateRTS} {
		if err := qp.Modify(s, a); err != nil {
			qp.Close()
			return nil, err
		}
	}
	return &extraQP{qp: qp, r: r}, nil
}

// local is what the peer of this QP needs: its QPN, with r's GID and MR.
func (x *extraQP) local() verbs.Endpoint {
	e := x.r.local()
	e.QPN = x.qp.Num()
	return e
}

// pairUp connects two fresh ends a (server side) and b (client side).
func pairUp(a, b *rc) error {
	if err := a.connect(b.local()); err != nil {
		return err
	}
	return b.connect(a.local())
}

// smallPair opens a connected pair with 4 KiB MRs and short queues: the
// server's MR grants srvAccess, the client's local write; tune, if set,
// adjusts the client's options (RNR retries, timeouts). close frees both.
func smallPair(top topology, srvAccess verbs.Access, tune func(*rcOpts)) (srv, cli *rc, close func(), err error) {
	if srv, err = openRC(rcOpts{Side: top.Server, BufSize: 4096, Access: srvAccess, SendWR: 4, RecvWR: 4}); err != nil {
		return nil, nil, nil, err
	}
	co := rcOpts{Side: top.Client, BufSize: 4096, Access: verbs.AccessLocalWrite, SendWR: 4, RecvWR: 4}
	if tune != nil {
		tune(&co)
	}
	if cli, err = openRC(co); err != nil {
		srv.Close()
		return nil, nil, nil, err
	}
	close = func() { cli.Close(); srv.Close() }
	if err = pairUp(srv, cli); err != nil {
		close()
		return nil, nil, nil, err
	}
	return srv, cli, close, nil
}

// sendAndWait posts wr on r's QP and waits for its completion.
func (r *rc) sendAndWait(ctx context.Context, wr verbs.SendWR) (verbs.WC, error) {
	if err := r.qp.PostSend(wr); err != nil {
		return verbs.WC{}, err
	}
	return r.waitCQ(ctx, r.sendCQ, 20*time.Second)
}

// le64 reads the 8-byte little-endian word at off of a buffer (an atomic's
// result lands in host order; the remote counter is an x86 uint64).
func le64(b *verbs.Buffer, off int) uint64 { return binary.LittleEndian.Uint64(b.Bytes()[off:]) }

func putLE64(b *verbs.Buffer, off int, v uint64) { binary.LittleEndian.PutUint64(b.Bytes()[off:], v) }

// wcText names a completion status in both languages: "IBV_WC_… (text)".
func wcText(st verbs.WCStatus) sandbox.Text {
	return say(fmt.Sprintf("%s (%s)", st, st.Description()), fmt.Sprintf("%s（%s）", st, wcStatusZh(st)))
}

// errnoText names an errno in both languages: "EINVAL (Invalid argument)".
func errnoText(e error) sandbox.Text {
	var ve *verbs.Error
	if !errors.As(e, &ve) {
		return say(e.Error(), e.Error())
	}
	n := verbs.ErrnoName(ve.Errno)
	return say(fmt.Sprintf("%s fails: %s (%s)", ve.Call, n, verbs.Strerror(ve.Errno)),
		fmt.Sprintf("%s 失败：%s（%s）", ve.Call, n, expkit.ErrnoZh(n, verbs.Strerror(ve.Errno))))
}

// kernelRelease is this kernel's release ("6.1.0-57-amd64"): rxe's
// behaviour depends on it, so verdicts that rest on it name it.
func kernelRelease() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return "?"
	}
	return unix.ByteSliceToString(u.Release[:])
}
