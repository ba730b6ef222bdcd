package verbs

import (
	"bytes"
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"
)

func TestParseGID(t *testing.T) {
	g, err := ParseGID("0000:0000:0000:0000:0000:ffff:0a00:0001\n")
	if err != nil {
		t.Fatal(err)
	}
	if !g.IsIPv4() || g.IP().String() != "10.0.0.1" {
		t.Fatalf("GID %s: IPv4=%v IP=%s, want IPv4 10.0.0.1", g, g.IsIPv4(), g.IP())
	}
	if g.String() != "0000:0000:0000:0000:0000:ffff:0a00:0001" {
		t.Fatalf("String() = %s", g)
	}
	ll, _ := ParseGID("fe80:0000:0000:0000:5054:00ff:fe12:3456")
	if ll.IsIPv4() {
		t.Fatal("link-local GID reported as IPv4-mapped")
	}
	for _, bad := range []string{"", "xyz", "0000:0000"} {
		if _, err := ParseGID(bad); err == nil {
			t.Errorf("ParseGID(%q) succeeded", bad)
		}
	}
}

func TestNames(t *testing.T) {
	if WCRemAccessErr.String() != "IBV_WC_REM_ACCESS_ERR" || WCRemAccessErr.Description() != "remote access error" {
		t.Fatalf("status 10 = %s / %s", WCRemAccessErr, WCRemAccessErr.Description())
	}
	if WCRNRRetryExcErr.Description() != "RNR retry counter exceeded" {
		t.Fatal(WCRNRRetryExcErr.Description())
	}
	e := &Error{Call: "ibv_reg_mr", Errno: syscall.ENOMEM}
	if e.Error() != "ibv_reg_mr: Cannot allocate memory (ENOMEM)" || !errors.Is(e, syscall.ENOMEM) {
		t.Fatalf("Error() = %q", e.Error())
	}
	if StateRTS.String() != "RTS" || (AccessLocalWrite|AccessRemoteWrite).String() != "LOCAL_WRITE|REMOTE_WRITE" {
		t.Fatal("state/access names")
	}
}

func TestBufferIsOutsideHeapAndCloses(t *testing.T) {
	b, err := NewBuffer(3 * 4096)
	if err != nil {
		t.Fatal(err)
	}
	if b.Addr()%4096 != 0 {
		t.Fatalf("buffer at %#x is not page aligned", b.Addr())
	}
	b.Store32(8, 0xdeadbeef)
	if b.Load32(8) != 0xdeadbeef || b.Bytes()[8] != 0xef {
		t.Fatal("store/load")
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := NewBuffer(0); err == nil {
		t.Fatal("NewBuffer(0) succeeded")
	}
}

func TestExchangeTimesOutWithoutPeer(t *testing.T) {
	l, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	start := time.Now()
	_, err = Accept(context.Background(), l, 150*time.Millisecond)
	if !errors.Is(err, ErrPeerTimeout) {
		t.Fatalf("Accept without a peer: %v, want ErrPeerTimeout", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("Accept did not honour its timeout")
	}
	// a dial to a port nobody listens on also ends with ErrPeerTimeout
	dead, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := dead.Addr().String()
	dead.Close()
	if _, err := Dial(context.Background(), addr, 150*time.Millisecond); !errors.Is(err, ErrPeerTimeout) {
		t.Fatalf("Dial to nobody: %v", err)
	}
}

func TestExchange(t *testing.T) {
	l, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	got := make(chan Endpoint, 1)
	go func() {
		c, err := Accept(ctx, l, 5*time.Second)
		if err != nil {
			t.Error(err)
			close(got)
			return
		}
		defer c.Close()
		r, err := Exchange(c, Endpoint{QPN: 1, GID: "srv"}, 5*time.Second)
		if err != nil {
			t.Error(err)
		}
		got <- r
	}()
	c, err := Dial(ctx, l.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := Exchange(c, Endpoint{QPN: 2, RKey: 7, Addr: 1 << 40, GID: "cli"}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r.QPN != 1 || r.GID != "srv" {
		t.Fatalf("client got %+v", r)
	}
	if s := <-got; s.QPN != 2 || s.RKey != 7 || s.Addr != 1<<40 {
		t.Fatalf("server got %+v", s)
	}
}

// rdmaDevice returns the first RDMA device with an IPv4 GID, or skips: the
// host kernel of the development machines has none; these tests run for real
// inside the Soft-RoCE guest.
func rdmaDevice(t testing.TB) (string, GIDEntry) {
	t.Helper()
	if !Supported {
		t.Skip("built without cgo: no verbs support")
	}
	for _, d := range DeviceNames() {
		if g, err := IPv4GID(d, 1); err == nil {
			return d, g
		}
	}
	t.Skip("no RDMA device with an IPv4 GID on this kernel (run inside the Soft-RoCE guest)")
	return "", GIDEntry{}
}

// pair is two RC QPs on one device connected to each other (rxe loops back).
type pair struct {
	ctx      *Context
	pd       *PD
	cq       [2]*CQ
	qp       [2]*QP
	buf      [2]*Buffer
	mr       [2]*MR
	closeAll func()
}

func newPair(t testing.TB, dev string, gid GIDEntry, access Access) *pair {
	t.Helper()
	p := &pair{}
	var closers []func() error
	p.closeAll = func() {
		for i := len(closers) - 1; i >= 0; i-- {
			if err := closers[i](); err != nil {
				t.Errorf("close: %v", err)
			}
		}
	}
	t.Cleanup(p.closeAll)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	var err error
	p.ctx, err = Open(dev)
	must(err)
	closers = append(closers, p.ctx.Close)
	port, err := p.ctx.QueryPort(1)
	must(err)
	p.pd, err = p.ctx.AllocPD()
	must(err)
	closers = append(closers, p.pd.Close)
	for i := range 2 {
		p.buf[i], err = NewBuffer(8192)
		must(err)
		closers = append(closers, p.buf[i].Close)
		p.mr[i], err = p.pd.RegMR(p.buf[i], 0, 8192, access)
		must(err)
		closers = append(closers, p.mr[i].Close)
		p.cq[i], err = p.ctx.NewCQ(16, nil)
		must(err)
		closers = append(closers, p.cq[i].Close)
		p.qp[i], err = p.pd.NewQP(p.cq[i], p.cq[i], QPCaps{MaxSendWR: 8, MaxRecvWR: 8, MaxInline: 64})
		must(err)
		closers = append(closers, p.qp[i].Close)
	}
	for i := range 2 {
		a := DefaultQPAttr(1, gid.Index, port.ActiveMTU)
		a.DestQPN, a.DGID, a.RQPSN, a.SQPSN = p.qp[1-i].Num(), gid.GID, 100, 100
		for _, s := range []QPState{StateInit, StateRTR, StateRTS} {
			must(p.qp[i].Modify(s, a))
		}
		st, err := p.qp[i].State()
		must(err)
		if st != StateRTS {
			t.Fatalf("QP state %s after RTS", st)
		}
	}
	return p
}

func waitWC(t testing.TB, cq *CQ) WC {
	t.Helper()
	wc := make([]WC, 1)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		n, err := cq.Poll(wc)
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			return wc[0]
		}
	}
	t.Fatal("no completion within 10 s")
	return WC{}
}

func TestWriteSendOnDevice(t *testing.T) {
	dev, gid := rdmaDevice(t)
	p := newPair(t, dev, gid, AccessLocalWrite|AccessRemoteWrite)
	msg := []byte("hello, one-sided world")
	copy(p.buf[0].Bytes(), msg)
	if err := p.qp[0].PostSend(SendWR{ID: 1, Op: OpWrite, Flags: SendSignaled, MR: p.mr[0], Length: len(msg),
		RemoteAddr: p.mr[1].Addr() + 100, RKey: p.mr[1].RKey()}); err != nil {
		t.Fatal(err)
	}
	if wc := waitWC(t, p.cq[0]); wc.Err() != nil || wc.Opcode != WCRDMAWrite {
		t.Fatalf("WRITE completion %+v: %v", wc, wc.Err())
	}
	if got := p.buf[1].Bytes()[100 : 100+len(msg)]; !bytes.Equal(got, msg) {
		t.Fatalf("target holds %q", got)
	}

	// SEND with immediate into a posted RECV
	if err := p.qp[1].PostRecv(9, p.mr[1], 4096, 4096); err != nil {
		t.Fatal(err)
	}
	if err := p.qp[0].PostSend(SendWR{ID: 2, Op: OpSendWithImm, Flags: SendSignaled, MR: p.mr[0], Length: 5, Imm: 0x01020304}); err != nil {
		t.Fatal(err)
	}
	if wc := waitWC(t, p.cq[0]); wc.Err() != nil {
		t.Fatal(wc.Err())
	}
	wc := waitWC(t, p.cq[1])
	if wc.Err() != nil || wc.WRID != 9 || wc.ByteLen != 5 || !wc.HasImm || wc.Imm != 0x01020304 || wc.Opcode != WCRecv {
		t.Fatalf("RECV completion %+v", wc)
	}
	if string(p.buf[1].Bytes()[4096:4101]) != "hello" {
		t.Fatalf("received %q", p.buf[1].Bytes()[4096:4101])
	}
}

func TestWrongRKeyIsRemoteAccessError(t *testing.T) {
	dev, gid := rdmaDevice(t)
	p := newPair(t, dev, gid, AccessLocalWrite|AccessRemoteWrite)
	if err := p.qp[0].PostSend(SendWR{ID: 1, Op: OpWrite, Flags: SendSignaled, MR: p.mr[0], Length: 8,
		RemoteAddr: p.mr[1].Addr(), RKey: p.mr[1].RKey() ^ 0x5a5a00}); err != nil {
		t.Fatal(err)
	}
	wc := waitWC(t, p.cq[0])
	if wc.Status != WCRemAccessErr {
		t.Fatalf("WRITE with a wrong rkey completed with %s, want IBV_WC_REM_ACCESS_ERR", wc.Status)
	}
	var we *WCError
	if !errors.As(wc.Err(), &we) {
		t.Fatal("Err() is not a *WCError")
	}
}

func TestEventModeWakesOnCompletion(t *testing.T) {
	dev, gid := rdmaDevice(t)
	p := newPair(t, dev, gid, AccessLocalWrite|AccessRemoteWrite)
	ch, err := p.ctx.NewCompChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	cq, err := p.ctx.NewCQ(4, ch)
	if err != nil {
		t.Fatal(err)
	}
	defer cq.Close()
	if err := cq.ReqNotify(false); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.Wait(50 * time.Millisecond); !errors.Is(err, ErrWaitTimeout) {
		t.Fatalf("Wait on an idle CQ: %v", err)
	}
}

func TestRegMRAndResourceCleanup(t *testing.T) {
	dev, _ := rdmaDevice(t)
	ctx, err := Open(dev)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	pd, err := ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	defer pd.Close()
	b, _ := NewBuffer(1 << 20)
	defer b.Close()
	mr, err := pd.RegMR(b, 0, 1<<20, AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	if mr.Len() != 1<<20 || mr.Addr() != b.Addr() {
		t.Fatalf("MR %d bytes at %#x", mr.Len(), mr.Addr())
	}
	if err := mr.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := pd.RegMR(b, 4096, 1<<20, AccessLocalWrite); err == nil {
		t.Fatal("registering past the buffer's end succeeded")
	}
	if _, err := Open("nosuchdev0"); !errors.Is(err, syscall.ENODEV) {
		t.Fatalf("Open(nosuchdev0): %v", err)
	}
}
