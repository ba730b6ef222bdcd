package rdmaexp

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
)

// Atomics is the experiment "a remote counter, two QPs": the same shared
// 8-byte counter incremented by two client QPs at once, first with a READ
// followed by a WRITE (lost updates), then with FETCH_AND_ADD, then under a
// spin lock built on CMP_AND_SWP; then the errors the device answers for a
// misaligned atomic and for missing REMOTE_ATOMIC rights, and the bound
// on outstanding atomics (max_rd_atomic).
func Atomics() *sandbox.Experiment {
	return &sandbox.Experiment{
		ID:    "atomics",
		Title: say("Remote atomics: one counter, two QPs", "远程原子操作：一个计数器，两个 QP"),
		Summary: say(
			"Two client QPs increment one 8-byte counter in the server's memory at the same time: with READ then WRITE (updates get lost), with FETCH_AND_ADD (none do), and under a spin lock built on COMPARE_AND_SWAP. Then the device's answers to a misaligned atomic, to missing REMOTE_ATOMIC rights, and to a max_rd_atomic beyond its limit.",
			"两个客户端 QP 同时给服务端内存里的同一个 8 字节计数器加一：先用 READ 再 WRITE（会丢更新），再用 FETCH_AND_ADD（一个不丢），再在用 COMPARE_AND_SWAP 做的自旋锁保护下做。然后看设备如何回答未对齐的原子操作、缺少 REMOTE_ATOMIC 权限，以及超过上限的 max_rd_atomic。"),
		Needs:   sandbox.NeedRDMA,
		Sharing: sandbox.Shareable,
		Params: []sandbox.Param{
			{Name: "increments", Kind: sandbox.ParamInt, Title: say("Increments per QP", "每个 QP 加一的次数"), Default: 300, Min: 50, Max: 2000},
		},
		Presets: []sandbox.Preset{{ID: "default", Title: say("300 increments per QP", "每个 QP 加一 300 次"), Values: map[string]any{"increments": 300}}},
		Timeout: 3 * time.Minute,
		Run:     runAtomics,
	}
}

const atomMRSize = 4096

// Offsets in the server's MR: the counter, the lock word.
const (
	atomCounterOff = 0
	atomLockOff    = 8
)

// atomRig is one server end (the counter's MR, a second QP in its PD) and
// two client ends, one per racing thread.
type atomRig struct {
	srv   *rc
	srv2  *extraQP
	cli   [2]*rc
	tgt   [2]verbs.Endpoint // what each client targets (server QP, MR addr, rkey)
	close []func() error
}

func (g *atomRig) Close() {
	for i := len(g.close) - 1; i >= 0; i-- {
		g.close[i]()
	}
}

func atomServerOpts(top topology, mrAccess, qpAccess verbs.Access) rcOpts {
	return rcOpts{Side: top.Server, BufSize: atomMRSize, Access: mrAccess, QPAccess: qpAccess, SendWR: 16, RecvWR: 4}
}

const atomAll = verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead | verbs.AccessRemoteAtom

func newAtomRig(top topology) (g *atomRig, err error) {
	g = &atomRig{}
	defer func() {
		if err != nil {
			g.Close()
		}
	}()
	if g.srv, err = openRC(atomServerOpts(top, atomAll, atomAll)); err != nil {
		return nil, err
	}
	g.close = append(g.close, g.srv.Close)
	for i := range g.cli {
		if g.cli[i], err = openRC(rcOpts{Side: top.Client, BufSize: atomMRSize, Access: verbs.AccessLocalWrite, SendWR: 16, RecvWR: 4}); err != nil {
			return nil, err
		}
		g.close = append(g.close, g.cli[i].Close)
	}
	if err = pairUp(g.srv, g.cli[0]); err != nil {
		return nil, err
	}
	g.tgt[0] = g.srv.local()
	if g.srv2, err = newExtraQP(g.srv, g.cli[1].local()); err != nil {
		return nil, err
	}
	g.close = append(g.close, g.srv2.qp.Close)
	g.tgt[1] = g.srv2.local()
	if err = g.cli[1].connect(g.tgt[1]); err != nil {
		return nil, err
	}
	return g, nil
}

// atomWorker is one racing client thread.
type atomWorker struct {
	c        *rc
	tgt      verbs.Endpoint
	id       uint64
	done     atomic.Int64
	casTries int64 // CMP_AND_SWP attempts that found the lock taken
	olds     []uint64
}

func (w *atomWorker) wait(ctx context.Context) error {
	wc, err := w.c.waitCQ(ctx, w.c.sendCQ, 20*time.Second)
	if err != nil {
		return err
	}
	return wc.Err()
}

func (w *atomWorker) read(ctx context.Context, remote uint64, into int) (uint64, error) {
	if err := w.c.qp.PostSend(verbs.SendWR{ID: 1, Op: verbs.OpRead, Flags: verbs.SendSignaled, MR: w.c.mr, Offset: into, Length: 8, RemoteAddr: remote, RKey: w.tgt.RKey}); err != nil {
		return 0, err
	}
	if err := w.wait(ctx); err != nil {
		return 0, err
	}
	return le64(w.c.buf, into), nil
}

func (w *atomWorker) write(ctx context.Context, remote uint64, from int, v uint64) error {
	putLE64(w.c.buf, from, v)
	if err := w.c.qp.PostSend(verbs.SendWR{ID: 2, Op: verbs.OpWrite, Flags: verbs.SendSignaled, MR: w.c.mr, Offset: from, Length: 8, RemoteAddr: remote, RKey: w.tgt.RKey}); err != nil {
		return err
	}
	return w.wait(ctx)
}

func (w *atomWorker) atomic(ctx context.Context, op verbs.Opcode, remote, compareAdd, swap uint64) (uint64, error) {
	if err := w.c.qp.PostAtomic(3, op, verbs.SendSignaled, w.c.mr, 24, remote, w.tgt.RKey, compareAdd, swap); err != nil {
		return 0, err
	}
	if err := w.wait(ctx); err != nil {
		return 0, err
	}
	return le64(w.c.buf, 24), nil
}

// run does n increments of the remote counter in the given mode.
func (w *atomWorker) run(ctx context.Context, mode string, n int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	counter, lock := w.tgt.Addr+atomCounterOff, w.tgt.Addr+atomLockOff
	for range n {
		switch mode {
		case "rmw":
			v, err := w.read(ctx, counter, 0)
			if err != nil {
				return err
			}
			if err := w.write(ctx, counter, 8, v+1); err != nil {
				return err
			}
		case "faa":
			old, err := w.atomic(ctx, verbs.OpAtomicFetchAdd, counter, 1, 0)
			if err != nil {
				return err
			}
			w.olds = append(w.olds, old)
		case "lock":
			for {
				old, err := w.atomic(ctx, verbs.OpAtomicCmpSwp, lock, 0, w.id)
				if err != nil {
					return err
				}
				if old == 0 {
					break
				}
				w.casTries++
			}
			v, err := w.read(ctx, counter, 0)
			if err != nil {
				return err
			}
			if err := w.write(ctx, counter, 8, v+1); err != nil {
				return err
			}
			// release: a WRITE of 0, after the counter's WRITE completed
			if err := w.write(ctx, lock, 16, 0); err != nil {
				return err
			}
		}
		w.done.Add(1)
	}
	return nil
}

// atomRace is the outcome of one mode.
type atomRace struct {
	final, lost int64
	casTries    int64
	distinct    bool // FETCH_AND_ADD: the old values were 0 … 2n−1, each once
}

func raceCounter(ctx context.Context, emit sandbox.Emitter, top topology, mode string, n int, label sandbox.Text) (atomRace, error) {
	var out atomRace
	g, err := newAtomRig(top)
	if err != nil {
		return out, err
	}
	defer g.Close()
	putLE64(g.srv.buf, atomCounterOff, 0)
	putLE64(g.srv.buf, atomLockOff, 0)
	ws := []*atomWorker{{c: g.cli[0], tgt: g.tgt[0], id: 1}, {c: g.cli[1], tgt: g.tgt[1], id: 2}}
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = w.run(ctx, mode, n) }()
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	tick := time.NewTicker(150 * time.Millisecond)
	defer tick.Stop()
	sample := func() {
		done := ws[0].done.Load() + ws[1].done.Load()
		lost := max(done-int64(le64(g.srv.buf, atomCounterOff)), 0)
		metric(emit, "lost_"+mode, label, float64(done), float64(lost), "lost")
	}
	// A point at the start: a race that ends before the first tick still
	// draws a line from nothing done to its end, not a lone dot at the
	// far right of the axis (issue 44 item 6).
	sample()
loop:
	for {
		select {
		case <-finished:
			break loop
		case <-tick.C:
			sample()
		}
	}
	if err := errors.Join(errs...); err != nil {
		return out, err
	}
	sample()
	out.final = int64(le64(g.srv.buf, atomCounterOff))
	out.lost = int64(2*n) - out.final
	out.casTries = ws[0].casTries + ws[1].casTries
	if mode == "faa" {
		olds := append(slices.Clone(ws[0].olds), ws[1].olds...)
		slices.Sort(olds)
		out.distinct = len(olds) == 2*n
		for i, v := range olds {
			if v != uint64(i) {
				out.distinct = false
				break
			}
		}
	}
	return out, nil
}

// atomErr is what the device answered to one broken atomic.
type atomErr struct {
	postErr error
	wc      verbs.WC
	posted  bool
}

func (e atomErr) text() sandbox.Text {
	if e.postErr != nil {
		return errnoText(e.postErr)
	}
	return say("completion "+wcText(e.wc.Status)["en"], "完成状态 "+wcText(e.wc.Status)["zh"])
}

// brokenAtomic connects a fresh pair and posts one FETCH_AND_ADD at
// counter+off, with the server's MR and QP granting the given rights.
func brokenAtomic(ctx context.Context, top topology, mrAccess, qpAccess verbs.Access, off uint64) (atomErr, error) {
	var out atomErr
	srv, err := openRC(atomServerOpts(top, mrAccess, qpAccess))
	if err != nil {
		return out, err
	}
	defer srv.Close()
	cli, err := openRC(rcOpts{Side: top.Client, BufSize: atomMRSize, Access: verbs.AccessLocalWrite, SendWR: 4, RecvWR: 4})
	if err != nil {
		return out, err
	}
	defer cli.Close()
	if err := pairUp(srv, cli); err != nil {
		return out, err
	}
	t := srv.local()
	if err := cli.qp.PostAtomic(9, verbs.OpAtomicFetchAdd, verbs.SendSignaled, cli.mr, 0, t.Addr+off, t.RKey, 1, 0); err != nil {
		var ve *verbs.Error
		if errors.As(err, &ve) {
			out.postErr = err
			return out, nil
		}
		return out, err
	}
	out.posted = true
	out.wc, err = cli.waitCQ(ctx, cli.sendCQ, 20*time.Second)
	return out, err
}

// rdAtomicOver tries to connect with max_rd_atomic one above the device's
// max_qp_init_rd_atom and returns the error ibv_modify_qp gave (nil: accepted).
func rdAtomicOver(top topology, limit int) (error, error) {
	srv, err := openRC(atomServerOpts(top, atomAll, atomAll))
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	cli, err := openRC(rcOpts{Side: top.Client, BufSize: atomMRSize, Access: verbs.AccessLocalWrite, SendWR: 4, RecvWR: 4,
		Tune: func(a *verbs.QPAttr) { a.MaxRdAtomic = limit + 1 }})
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	if err := srv.connect(cli.local()); err != nil {
		return nil, err
	}
	err = cli.connect(srv.local())
	var ve *verbs.Error
	if err != nil && !errors.As(err, &ve) {
		return nil, err
	}
	return err, nil
}

func runAtomics(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
	n := int(p["increments"].(int64))
	top, err := pickTopology()
	if err != nil {
		return err
	}
	note(emit, "info", top.describe())
	figs := map[string]float64{"increments": float64(n)}

	phase(emit, "device", say("What the device says about atomics", "设备对原子操作的说明"))
	ctxDev, err := verbs.Open(top.Client.Dev)
	if err != nil {
		return verbsError(emit, err)
	}
	caps, err := ctxDev.QueryCaps()
	ctxDev.Close()
	if err != nil {
		return verbsError(emit, err)
	}
	figs["atomic_cap"] = float64(caps.AtomicCap)
	figs["max_qp_rd_atom"] = float64(caps.MaxQPRdAtom)
	figs["max_qp_init_rd_atom"] = float64(caps.MaxQPInitRdAtom)
	dt := sandbox.NewTable(say("ibv_query_device on "+top.Client.Dev, top.Client.Dev+" 上的 ibv_query_device"), say("field", "字段"), say("value", "值"), say("what it bounds", "它限制什么"))
	dt.AddRow(sandbox.Same("atomic_cap"), sandbox.Same(caps.AtomicCap.String()),
		say("HCA: atomic against other atomics of this device only, not against the CPU's own stores", "HCA：只与本设备的其他原子操作互斥，不与 CPU 自己的写互斥"))
	dt.AddRow(sandbox.Same("max_qp_init_rd_atom"), sandbox.Same(fmt.Sprint(caps.MaxQPInitRdAtom)),
		say("the largest max_rd_atomic: READs and atomics one QP may have outstanding as requester", "max_rd_atomic 的上限：一个 QP 作为请求方可同时在途的 READ 与原子操作数"))
	dt.AddRow(sandbox.Same("max_qp_rd_atom"), sandbox.Same(fmt.Sprint(caps.MaxQPRdAtom)),
		say("the largest max_dest_rd_atomic: READs and atomics one QP accepts at once as responder", "max_dest_rd_atomic 的上限：一个 QP 作为响应方可同时接受的 READ 与原子操作数"))
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: dt})

	modes := []struct {
		id    string
		title sandbox.Text
		label sandbox.Text
	}{
		{"rmw", say("READ, add one, WRITE back — from two QPs at once", "READ、加一、WRITE 回去——两个 QP 同时做"), say("READ + WRITE", "READ + WRITE")},
		{"faa", say("FETCH_AND_ADD — from two QPs at once", "FETCH_AND_ADD——两个 QP 同时做"), say("FETCH_AND_ADD", "FETCH_AND_ADD")},
		{"lock", say("a spin lock on COMPARE_AND_SWAP around READ + WRITE", "用 COMPARE_AND_SWAP 做自旋锁，保护 READ + WRITE"), say("CAS lock + READ + WRITE", "CAS 锁 + READ + WRITE")},
	}
	races := map[string]atomRace{}
	rt := sandbox.NewTable(say(fmt.Sprintf("one counter, two QPs, %d increments each", n), fmt.Sprintf("一个计数器，两个 QP，各加一 %d 次", n)),
		say("method", "方法"), say("expected", "应得"), say("counter", "计数器"), say("lost updates", "丢失的更新"), say("COMPARE_AND_SWAP retried", "重试的 COMPARE_AND_SWAP"))
	for _, m := range modes {
		phase(emit, m.id, m.title)
		r, err := raceCounter(ctx, emit, top, m.id, n, m.label)
		if err != nil {
			return verbsError(emit, err)
		}
		races[m.id] = r
		figs[m.id+"_final"] = float64(r.final)
		figs[m.id+"_lost"] = float64(r.lost)
		retried := sandbox.Same("—") // only the lock's CAS is retried
		if m.id == "lock" {
			retried = sandbox.Same(fmt.Sprint(r.casTries))
		}
		rt.AddRow(m.label, sandbox.Same(fmt.Sprint(2*n)), sandbox.Same(fmt.Sprint(r.final)), sandbox.Same(fmt.Sprint(r.lost)), retried)
		switch m.id {
		case "faa":
			figs["faa_distinct"] = b2f(r.distinct)
			if r.distinct {
				note(emit, "info", say(fmt.Sprintf("The %d values FETCH_AND_ADD returned were 0 … %d, each exactly once: every increment saw the one before it.", 2*n, 2*n-1),
					fmt.Sprintf("FETCH_AND_ADD 返回的 %d 个旧值恰好是 0 … %d，各出现一次：每次加一都看到了前一次的结果。", 2*n, 2*n-1)))
			}
		case "lock":
			figs["cas_busy"] = float64(r.casTries)
			note(emit, "info", say(fmt.Sprintf("COMPARE_AND_SWAP found the lock taken %d times and was retried.", r.casTries),
				fmt.Sprintf("COMPARE_AND_SWAP 有 %d 次发现锁已被占用，于是重试。", r.casTries)))
		}
	}
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: rt})

	phase(emit, "errors", say("What the device answers to broken atomics", "设备如何回答出错的原子操作"))
	et := sandbox.NewTable(say("broken atomics", "出错的原子操作"), say("case", "情形"), say("the device answered", "设备的回答"))
	type ecase struct {
		id     string
		title  sandbox.Text
		mr, qp verbs.Access
		off    uint64
	}
	noAtom := atomAll &^ verbs.AccessRemoteAtom
	for _, c := range []ecase{
		{id: "misaligned", title: say("FETCH_AND_ADD at an address 4 bytes past an 8-byte boundary", "FETCH_AND_ADD 的地址比 8 字节边界多 4 字节"), mr: atomAll, qp: atomAll, off: 4},
		{id: "mr_no_atomic", title: say("the server's MR registered without REMOTE_ATOMIC", "服务端的 MR 注册时没有 REMOTE_ATOMIC"), mr: noAtom, qp: atomAll},
		{id: "qp_no_atomic", title: say("the server's QP access flags without REMOTE_ATOMIC", "服务端 QP 的访问标志里没有 REMOTE_ATOMIC"), mr: atomAll, qp: noAtom},
	} {
		r, err := brokenAtomic(ctx, top, c.mr, c.qp, c.off)
		if err != nil {
			return verbsError(emit, err)
		}
		if r.postErr != nil {
			var ve *verbs.Error
			errors.As(r.postErr, &ve)
			figs[c.id+"_post_errno"] = float64(ve.Errno)
		} else {
			figs[c.id+"_status"] = float64(r.wc.Status)
		}
		et.AddRow(c.title, r.text())
	}
	over, err := rdAtomicOver(top, caps.MaxQPInitRdAtom)
	if err != nil {
		return verbsError(emit, err)
	}
	overText := say("accepted", "被接受")
	if over != nil {
		var ve *verbs.Error
		errors.As(over, &ve)
		figs["rd_atomic_over_errno"] = float64(ve.Errno)
		overText = errnoText(over)
	}
	et.AddRow(say(fmt.Sprintf("max_rd_atomic = %d, one above max_qp_init_rd_atom", caps.MaxQPInitRdAtom+1), fmt.Sprintf("max_rd_atomic = %d，比 max_qp_init_rd_atom 大一", caps.MaxQPInitRdAtom+1)), overText)
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: et})

	rmw, faa, lk := races["rmw"], races["faa"], races["lock"]
	ok := faa.lost == 0 && lk.lost == 0
	var v sandbox.Text
	switch {
	case ok && rmw.lost > 0:
		v = say(fmt.Sprintf("Two QPs each added one %d times. With READ then WRITE the counter ended at %d: %d updates were lost, because between one QP's READ and its WRITE the other QP read the same value. With FETCH_AND_ADD it ended at %d: none lost — the responder did read, add and write as one step. The CAS spin lock also lost none (%d), at the price of %d retried COMPARE_AND_SWAPs. The responder here is Soft-RoCE's kernel code; on a hardware RNIC the NIC does the same.",
			n, rmw.final, rmw.lost, faa.final, lk.final, lk.casTries),
			fmt.Sprintf("两个 QP 各加一 %d 次。READ 再 WRITE 时计数器最后是 %d：丢了 %d 次更新，因为在一个 QP 的 READ 和 WRITE 之间，另一个 QP 读到了同一个值。FETCH_AND_ADD 时最后是 %d：一个没丢——响应方把读、加、写作为一步完成。CAS 自旋锁也一个没丢（%d），代价是 %d 次重试的 COMPARE_AND_SWAP。这里的响应方是 Soft-RoCE 的内核代码；在硬件网卡上由网卡做同样的事。",
				n, rmw.final, rmw.lost, faa.final, lk.final, lk.casTries))
	case ok:
		v = say(fmt.Sprintf("This run lost no update even with READ then WRITE (counter %d of %d): the two QPs never happened to interleave between a READ and its WRITE. Nothing prevents it — run again. FETCH_AND_ADD (%d) and the CAS lock (%d) lost none, by construction.", rmw.final, 2*n, faa.final, lk.final),
			fmt.Sprintf("这次即使用 READ 再 WRITE 也没有丢更新（计数器 %d，应得 %d）：两个 QP 恰好没有在某次 READ 与 WRITE 之间交错。没有任何机制阻止这种交错——再运行一次。FETCH_AND_ADD（%d）和 CAS 锁（%d）按设计一个不丢。", rmw.final, 2*n, faa.final, lk.final))
	default:
		v = say(fmt.Sprintf("FETCH_AND_ADD lost %d and the CAS lock %d updates: the device did not keep its atomics atomic here.", faa.lost, lk.lost),
			fmt.Sprintf("FETCH_AND_ADD 丢了 %d 次更新，CAS 锁丢了 %d 次：这台设备没有保证原子操作的原子性。", faa.lost, lk.lost))
	}
	result(emit, ok, v, figs)
	return nil
}
