package hostexp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmalab/rdmalab/internal/textclip"
	"github.com/rdmalab/rdmalab/machines/agentproc"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/expkit"
)

// Memlock is the experiment "why does registration fail with free
// memory?": a child process with the chosen RLIMIT_MEMLOCK, with or without
// CAP_IPC_LOCK, tries to lock (pin) a buffer — what ibv_reg_mr does to the
// pages of a memory region — then the fixes are tried the same way.
func Memlock() *sandbox.Experiment {
	return &sandbox.Experiment{
		ID:    "memlock",
		Title: say("Why does registration fail with free memory?", "为什么内存充足，注册内存却失败？"),
		Summary: say(
			"Pins a buffer with mlock() in a process whose RLIMIT_MEMLOCK (ulimit -l) and CAP_IPC_LOCK you choose — mlock charges locked_vm, ibv_reg_mr charges pinned_vm, and both are checked against that limit — and shows the errno beside the machine's free memory, then the fix.",
			"在一个子进程里用 mlock() 锁定（钉住）一块内存，RLIMIT_MEMLOCK（ulimit -l）和 CAP_IPC_LOCK 由你选择——mlock 记在 locked_vm 上，ibv_reg_mr 记在 pinned_vm 上，两者都要过这个上限——把错误码和本机空闲内存并排显示，然后演示修复。"),
		Needs:   sandbox.NeedHost,
		Sharing: sandbox.Shareable,
		Params: []sandbox.Param{
			expkit.LimitParam(say("How much memory the process may lock without CAP_IPC_LOCK.", "不持有 CAP_IPC_LOCK 时，进程最多能锁定多少内存。"),
				sandbox.Choice{Value: "8388608", Title: say("8 MiB (this machine's hard limit)", "8 MiB（本机的硬上限）")},
				sandbox.Choice{Value: "unlimited", Title: say("unlimited (where allowed)", "不限（在允许的地方）")}),
			expkit.SizeParam(say("Buffer to pin", "要钉住的缓冲区"),
				say("Like the length of a memory region passed to ibv_reg_mr.", "相当于传给 ibv_reg_mr 的内存区域长度。")),
			expkit.IPCLockParam(say("The capability that lets a process lock memory beyond the limit (a container needs it granted).", "允许进程突破上限锁定内存的能力（容器里需要显式授予）。")),
		},
		Presets: expkit.MemlockPresets("8388608"),
		Timeout: 30 * time.Second,
		Run:     runMemlock,
	}
}

// attempt is one lock try and its outcome, for the table.
type attempt struct {
	id    string // names its figure in the result: fix_<id>
	label sandbox.Text
	req   lockRequest
	rep   lockReply
}

func runMemlock(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
	size := p["size"].(int64)
	keep := p["ipc_lock"].(string) == "keep"
	limit := int64(unlimited)
	if s := p["limit"].(string); s != "unlimited" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("memlock: limit %q: %w", s, err)
		}
		limit = n
	}

	phase(emit, "inspect", say("Looking at this machine", "查看本机情况"))
	avail, err := expkit.MemAvailable()
	if err != nil {
		return fmt.Errorf("memlock: %w", err)
	}
	var own unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &own); err != nil {
		return fmt.Errorf("memlock: getrlimit: %w", err)
	}
	hard := expkit.Rlim(own.Max)
	canRaise := expkit.HasEffective(unix.CAP_SYS_RESOURCE)
	haveIPCLock := expkit.HasPermitted(unix.CAP_IPC_LOCK)
	note(emit, "info", say(fmt.Sprintf("MemAvailable %s; this agent's RLIMIT_MEMLOCK soft %s, hard %s", human(avail), limitText(expkit.Rlim(own.Cur)), limitText(hard)),
		fmt.Sprintf("MemAvailable %s；本 agent 的 RLIMIT_MEMLOCK 软上限 %s，硬上限 %s", human(avail), expkit.LimitTextZh(expkit.Rlim(own.Cur)), expkit.LimitTextZh(hard))))
	note(emit, "info", say(fmt.Sprintf("agent holds CAP_IPC_LOCK: %v; CAP_SYS_RESOURCE (needed to raise the hard limit): %v", haveIPCLock, canRaise),
		fmt.Sprintf("agent 持有 CAP_IPC_LOCK：%s；CAP_SYS_RESOURCE（提高硬上限需要它）：%s", yesNoZh(haveIPCLock), yesNoZh(canRaise))))

	phase(emit, "attempt", say("Pinning the buffer in a child process", "在子进程里钉住缓冲区"))
	first := attempt{id: "first", label: say("your choice", "你的选择"), req: lockRequest{Limit: limit, Size: size, KeepIPCLock: keep}}
	if first.rep, err = lockInChild(ctx, first.req); err != nil {
		return err
	}
	reportAttempt(emit, &first, avail)
	attempts := []*attempt{&first}

	if !first.rep.OK && first.rep.ErrnoName != "" {
		phase(emit, "fix", say("Trying the fixes", "尝试修复"))
		attempts = append(attempts, fixes(ctx, emit, first, avail, haveIPCLock)...)
	}
	for _, a := range attempts {
		if a.rep.Error != "" && a.rep.ErrnoName == "" {
			return fmt.Errorf("memlock: child: %s", a.rep.Error)
		}
	}
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: attemptTable(attempts)})

	ok := first.rep.OK
	v := verdictMemlock(attempts, avail)
	figs := map[string]float64{
		"mem_available": float64(avail), "size": float64(size),
		"limit": float64(first.rep.SoftLimit), "hard_limit": float64(first.rep.HardLimit),
		"ok": b2f(first.rep.OK), "errno": float64(first.rep.Errno),
	}
	for _, a := range attempts[1:] {
		figs["fix_"+a.id] = b2f(a.rep.OK)
	}
	emit.Emit(sandbox.Event{Type: sandbox.EvResult, OK: &ok, Message: v["en"], Messages: v, Figures: figs})
	return nil
}

// fixes tries what the lesson recommends after a failure: a limit the
// buffer fits under, and keeping CAP_IPC_LOCK.
func fixes(ctx context.Context, emit sandbox.Emitter, first attempt, avail int64, haveIPCLock bool) []*attempt {
	var out []*attempt
	hard := first.rep.HardLimit
	size := first.req.Size
	raise := &attempt{id: "raise_limit", label: say("raise limit", "提高上限"), req: lockRequest{Limit: unlimited, Size: size}}
	switch {
	case hard == unlimited:
		raise.req.Limit = unlimited
	case size <= hard:
		raise.req.Limit = hard
	default:
		// The buffer is bigger than a hard limit we cannot raise: the
		// fix within reach is a smaller buffer under the limit.
		raise.id = "smaller_buffer"
		raise.label = say("smaller buffer within the limit", "在上限之内用更小的缓冲区")
		raise.req.Limit = hard
		raise.req.Size = hard / 2
		note(emit, "warn", say(
			fmt.Sprintf("%s is more than this machine's hard limit of %s, which cannot be raised here: the limit fix is shown with a %s buffer instead.", human(size), human(hard), human(hard/2)),
			fmt.Sprintf("%s 超过了本机 %s 的硬上限，而这里无法提高硬上限：改用 %s 的缓冲区演示“上限”修复。", human(size), human(hard), human(hard/2))))
	}
	if raise.req.Limit != first.req.Limit || raise.req.Size != first.req.Size {
		if rep, err := lockInChild(ctx, raise.req); err == nil {
			raise.rep = rep
			reportAttempt(emit, raise, avail)
			out = append(out, raise)
		}
	}
	if !first.req.KeepIPCLock {
		if !haveIPCLock {
			note(emit, "warn", say(
				"This agent holds no CAP_IPC_LOCK, so the capability fix cannot be shown here. In a container, grant it (docker --cap-add IPC_LOCK; Kubernetes securityContext.capabilities.add: [IPC_LOCK]).",
				"本 agent 没有 CAP_IPC_LOCK，无法在这里演示能力修复。在容器里需要授予它（docker --cap-add IPC_LOCK；Kubernetes securityContext.capabilities.add: [IPC_LOCK]）。"))
			return out
		}
		grant := &attempt{id: "grant_ipc_lock", label: say("grant IPC_LOCK", "授予 IPC_LOCK"), req: lockRequest{Limit: first.req.Limit, Size: size, KeepIPCLock: true}}
		if rep, err := lockInChild(ctx, grant.req); err == nil {
			grant.rep = rep
			reportAttempt(emit, grant, avail)
			out = append(out, grant)
		}
	}
	return out
}

// lockInChild runs one attempt in a re-executed agent (the memlock-child
// helper) so the limit and the dropped capability die with it.
func lockInChild(ctx context.Context, req lockRequest) (lockReply, error) {
	spec, err := agentproc.Helper(memlockHelperName)
	if err != nil {
		return lockReply{}, fmt.Errorf("memlock: %w", err)
	}
	p, err := agentproc.Start(spec)
	if err != nil {
		return lockReply{}, fmt.Errorf("memlock: %w", err)
	}
	defer p.Close()
	if err := p.Send(req); err != nil {
		return lockReply{}, fmt.Errorf("memlock: %w", err)
	}
	p.CloseInput()
	var stdout []byte
	var stderr strings.Builder
	res := p.Watch(ctx, agentproc.Output{
		Stdout: func(r io.Reader) (err error) {
			stdout, err = io.ReadAll(io.LimitReader(r, 64<<10))
			return err
		},
		Stderr:    func(line string) { stderr.WriteString(line + "\n") },
		MaxStderr: 8 << 10,
	})
	if res.Exit != nil {
		if ctx.Err() != nil {
			return lockReply{}, ctx.Err()
		}
		return lockReply{}, fmt.Errorf("memlock: child process failed: %s: %s", agentproc.Describe(res.Exit), strings.TrimSpace(stderr.String()))
	}
	var rep lockReply
	if err := json.Unmarshal(stdout, &rep); err != nil {
		return lockReply{}, fmt.Errorf("memlock: child answered %q: %w", textclip.BytesOf(stdout, 200), err)
	}
	return rep, nil
}

// reportAttempt emits what one attempt shows: the limit note, and on
// failure the errno beside the free memory.
func reportAttempt(emit sandbox.Emitter, a *attempt, avail int64) {
	r := a.rep
	if r.LimitError != "" {
		note(emit, "warn", say(
			fmt.Sprintf("You asked for RLIMIT_MEMLOCK %s, but this machine's hard limit is %s and this process lacks CAP_SYS_RESOURCE, so it cannot be raised (%s). The attempt ran with the limit at the hard maximum, %s.",
				limitText(a.req.Limit), limitText(r.HardLimit), r.LimitError, limitText(r.SoftLimit)),
			fmt.Sprintf("你要求 RLIMIT_MEMLOCK 为%s，但本机硬上限是 %s，且本进程没有 CAP_SYS_RESOURCE，无法提高（%s）。本次尝试按硬上限 %s 进行。",
				limitTextZh(a.req.Limit), limitTextZh(r.HardLimit), r.LimitError, limitTextZh(r.SoftLimit))))
	}
	if r.BoundingNote != "" {
		note(emit, "info", say(r.BoundingNote, "子进程的能力边界集："+r.BoundingNote))
	}
	note(emit, "info", say(fmt.Sprintf("[%s] RLIMIT_MEMLOCK %s, CAP_IPC_LOCK %s, mlock(%s) → %s",
		a.label["en"], limitText(r.SoftLimit), onOff(r.CapIPCLock), human(a.req.Size), resultText(r)),
		fmt.Sprintf("[%s] RLIMIT_MEMLOCK %s，CAP_IPC_LOCK %s，mlock(%s) → %s",
			a.label["zh"], expkit.LimitTextZh(r.SoftLimit), expkit.KeptZh(r.CapIPCLock), human(a.req.Size), resultTextZh(r))))
	if !r.OK && r.ErrnoName != "" {
		msg := say(
			fmt.Sprintf("mlock(%s) failed: %s (%s) — while MemAvailable is %s. The limit (%s) is what ran out, not memory.",
				human(a.req.Size), r.Error, r.ErrnoName, human(avail), limitText(r.SoftLimit)),
			fmt.Sprintf("mlock(%s) 失败：%s（%s）——而此时 MemAvailable 有 %s。耗尽的是上限（%s），不是内存。",
				human(a.req.Size), expkit.ErrnoZh(r.ErrnoName, r.Error), r.ErrnoName, human(avail), limitTextZh(r.SoftLimit)))
		emit.Emit(sandbox.Event{Type: sandbox.EvError, Call: "mlock", Errno: r.Errno, ErrnoName: r.ErrnoName,
			Expected: expkit.LimitFailure(a.req.Size, r.SoftLimit, r.CapIPCLock, r.ErrnoName),
			Message:  msg["en"], Messages: msg})
	}
}

func attemptTable(as []*attempt) *sandbox.Table {
	t := sandbox.NewTable(say("mlock attempts", "mlock 尝试"), say("attempt", "尝试"), sandbox.Same("RLIMIT_MEMLOCK"), sandbox.Same("CAP_IPC_LOCK"), say("size", "大小"), say("result", "结果"))
	for _, a := range as {
		t.AddRow(a.label, say(limitText(a.rep.SoftLimit), expkit.LimitTextZh(a.rep.SoftLimit)), say(onOff(a.rep.CapIPCLock), expkit.KeptZh(a.rep.CapIPCLock)),
			sandbox.Same(human(a.req.Size)), say(resultText(a.rep), resultTextZh(a.rep)))
	}
	return t
}

// resultTextZh is resultText in Chinese (errno names and the C library's
// message stay as the system prints them).
func resultTextZh(r lockReply) string {
	if r.OK {
		return "已锁定"
	}
	if r.ErrnoName != "" {
		return r.ErrnoName + "（" + expkit.ErrnoZh(r.ErrnoName, r.Error) + "）"
	}
	return "失败：" + r.Error
}

func yesNoZh(b bool) string {
	if b {
		return "是"
	}
	return "否"
}

func verdictMemlock(as []*attempt, avail int64) sandbox.Text {
	first := as[0]
	r := first.rep
	size := human(first.req.Size)
	if r.OK {
		if r.CapIPCLock && (r.SoftLimit != unlimited && first.req.Size > r.SoftLimit) {
			return say(
				fmt.Sprintf("Pinning %s worked although RLIMIT_MEMLOCK is only %s: CAP_IPC_LOCK lets a process lock memory beyond the limit. That is why an RDMA container is granted IPC_LOCK.", size, limitText(r.SoftLimit)),
				fmt.Sprintf("虽然 RLIMIT_MEMLOCK 只有 %s，钉住 %s 仍然成功：CAP_IPC_LOCK 让进程可以突破上限锁定内存。这就是 RDMA 容器要授予 IPC_LOCK 的原因。", limitTextZh(r.SoftLimit), size))
		}
		return say(
			fmt.Sprintf("Pinning %s worked: it fits under RLIMIT_MEMLOCK %s, so no capability was needed. Memory registration (ibv_reg_mr) is checked against the same limit (it counts pinned_vm, where mlock counts locked_vm).", size, limitText(r.SoftLimit)),
			fmt.Sprintf("钉住 %s 成功：它没有超过 RLIMIT_MEMLOCK %s，因此不需要任何能力。内存注册（ibv_reg_mr）受的是同一个上限（它记在 pinned_vm 上，mlock 记在 locked_vm 上）。", size, limitTextZh(r.SoftLimit)))
	}
	var fixedEn, fixedZh string
	for _, a := range as[1:] {
		if a.rep.OK {
			fixedEn += fmt.Sprintf(" Fix “%s” (RLIMIT_MEMLOCK %s, CAP_IPC_LOCK %s, %s) succeeded.", a.label["en"], limitText(a.rep.SoftLimit), onOff(a.rep.CapIPCLock), human(a.req.Size))
			fixedZh += fmt.Sprintf("修复“%s”（RLIMIT_MEMLOCK %s，CAP_IPC_LOCK %s，%s）成功。", a.label["zh"], limitTextZh(a.rep.SoftLimit), onOffZh(a.rep.CapIPCLock), human(a.req.Size))
		}
	}
	return say(
		fmt.Sprintf("Pinning %s failed with %s “%s” while the machine had %s available: the process hit RLIMIT_MEMLOCK (%s) and had no CAP_IPC_LOCK. ibv_reg_mr fails the same way in a container with plenty of free memory: the pages it pins count against the same limit (as pinned_vm rather than locked_vm).%s",
			size, r.ErrnoName, r.Error, human(avail), limitText(r.SoftLimit), fixedEn),
		fmt.Sprintf("钉住 %s 失败，错误为 %s “%s”，而本机可用内存有 %s：进程撞上了 RLIMIT_MEMLOCK（%s），又没有 CAP_IPC_LOCK。容器里内存明明充足、ibv_reg_mr 却失败，也是这个原因：它钉住的页受同一个上限约束（记在 pinned_vm 而不是 locked_vm 上）。%s",
			size, r.ErrnoName, r.Error, human(avail), limitTextZh(r.SoftLimit), fixedZh))
}

// Shared with reg-mr, so both widgets word limits and the capability alike.
var (
	limitText   = expkit.LimitText
	limitTextZh = expkit.LimitTextZh
	onOff       = expkit.Kept
	onOffZh     = expkit.KeptZh
)

func resultText(r lockReply) string {
	if r.OK {
		return "locked"
	}
	if r.ErrnoName != "" {
		return r.ErrnoName + " " + r.Error
	}
	return r.Error
}
