// Package rdmaexp holds the experiments that need RDMA devices (Soft-RoCE in
// the lab's guest, or a host whose kernel has them); Register lists them.
// They run inside `labserver agent` and talk to
// the devices through package verbs; the peers that must be separate
// processes (a receiver whose CPU time we watch, a pong server) are hidden
// agent helpers started with agentproc.Helper.
//
// Learner-facing text is bilingual as in hostexp: an Event's Message is the
// English text and Messages carries {"zh", "en"}.
package rdmaexp

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/expkit"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
)

// Register adds the RDMA experiments and their helper processes to reg.
func Register(reg *sandbox.Registry) {
	reg.Register(RegMR())
	reg.Register(WriteSilent())
	reg.Register(Pingpong())
	reg.Register(RKey())
	reg.Register(QPStates())
	reg.Register(Perftest())
	reg.Register(Resources())
	reg.Register(Syscalls())
	reg.Register(LossSweep())
	reg.Register(RetryBudget())
	reg.Register(DSCPECN())
	reg.Register(WireCapture())
	reg.Register(Diagnose())
	reg.Register(UDvsRC())
	reg.Register(RDMACM())
	reg.Register(VerbsSteps())
	for _, d := range perfFamily {
		reg.Register(perfExperiment(d))
	}
	registerBeyond(reg)
	registerUpper(reg)
	registerUpperLibs(reg)
	reg.RegisterHelper(helperMTUGuard, mtuGuardHelper)
	reg.RegisterHelper(helperRegMR, regMRHelper)
	reg.RegisterHelper(helperReceiver, receiverHelper)
	reg.RegisterHelper(helperPong, pongHelper)
}

// Short names for the helpers shared with hostexp (package expkit), used
// on almost every line of the experiments.
var (
	say    = expkit.Say
	phase  = expkit.Phase
	logf   = expkit.Logf
	note   = expkit.Note
	result = expkit.Result
	human  = expkit.Human
	b2f    = expkit.B2F
)

// explain says what a failed verbs call means for a learner, in both
// languages. Unknown combinations get a generic line; the call and errno
// are always shown beside it.
func explain(call string, errno syscall.Errno) sandbox.Text {
	switch {
	case call == "ibv_reg_mr" && errno == syscall.ENOMEM:
		return say("Registering pins the pages and charges them to the process's pinned_vm. Without CAP_IPC_LOCK that may not exceed RLIMIT_MEMLOCK (ulimit -l), and this MR is bigger — the limit ran out, not the memory.",
			"注册内存要钉住页面，并记在进程的 pinned_vm 上。没有 CAP_IPC_LOCK 时它不能超过 RLIMIT_MEMLOCK（ulimit -l），而这个 MR 更大——耗尽的是上限，不是内存。")
	case call == "ibv_reg_mr" && errno == syscall.EPERM:
		return say("With RLIMIT_MEMLOCK (ulimit -l) at 0 and no CAP_IPC_LOCK, the kernel refuses to pin any memory at all: raise the limit or grant IPC_LOCK.",
			"RLIMIT_MEMLOCK（ulimit -l）为 0 且没有 CAP_IPC_LOCK 时，内核一页内存也不肯钉住：调高上限或授予 IPC_LOCK。")
	case call == "ibv_reg_mr" && errno == syscall.EACCES:
		return say("The device refused the access flags asked for this memory region.",
			"设备拒绝了为这个内存区域申请的访问权限。")
	case call == "ibv_modify_qp" && errno == syscall.EINVAL:
		return say("The QP cannot make this transition: either the step is not the next one in RESET → INIT → RTR → RTS, or an attribute that step requires is missing or wrong.",
			"QP 不能做这次状态转换：要么这一步不是 RESET → INIT → RTR → RTS 中的下一步，要么这一步必需的属性缺失或有误。")
	case call == "ibv_modify_qp" && (errno == syscall.ETIMEDOUT || errno == syscall.ENETUNREACH || errno == syscall.EHOSTUNREACH):
		return say("The device found no route to the peer's GID: on Soft-RoCE the IP route to the peer decides which netdev the packets leave by.",
			"设备找不到到对端 GID 的路由：在 Soft-RoCE 上，到对端的 IP 路由决定报文从哪个网卡发出。")
	case call == "ibv_post_send" || call == "ibv_post_recv":
		if errno == syscall.EINVAL {
			return say("The work request was refused when posted: the QP is not in a state that accepts it (SEND needs RTS, RECV needs at least INIT), or the request itself is malformed.",
				"投递工作请求时被拒绝：QP 所处的状态不接受它（SEND 需要 RTS，RECV 至少需要 INIT），或请求本身不合法。")
		}
		if errno == syscall.ENOMEM {
			return say("The queue is full: more work requests are outstanding than the QP was created for. Poll completions before posting more.",
				"队列已满：未完成的工作请求比创建 QP 时声明的多。先轮询完成再继续投递。")
		}
	case call == "ibv_get_device_list" || call == "ibv_open_device":
		return say("No usable RDMA device: Soft-RoCE (rdma_rxe) is not set up on this machine, or its user-space provider is missing.",
			"没有可用的 RDMA 设备：这台机器没有配置 Soft-RoCE（rdma_rxe），或缺少它的用户态驱动。")
	}
	return say(fmt.Sprintf("%s failed with %s: the device or the kernel refused the request.", call, verbs.ErrnoName(errno)),
		fmt.Sprintf("%s 失败，错误为 %s：设备或内核拒绝了这个请求。", call, verbs.ErrnoName(errno)))
}

// verbsError emits the error event for a failed verbs call — call, errno,
// its name and what it means — and returns err marked sandbox.Reported for
// the caller to pass up, so the agent adds no second, generic error event.
// Errors that are not verbs calls are returned unchanged (the agent reports
// them when the run fails).
func verbsError(emit sandbox.Emitter, err error) error {
	var ve *verbs.Error
	if !errors.As(err, &ve) {
		return err
	}
	t := explain(ve.Call, ve.Errno)
	en := fmt.Sprintf("%s: %s (%s). %s", ve.Call, verbs.Strerror(ve.Errno), verbs.ErrnoName(ve.Errno), t["en"])
	zh := fmt.Sprintf("%s：%s（%s）。%s", ve.Call, expkit.ErrnoZh(verbs.ErrnoName(ve.Errno), verbs.Strerror(ve.Errno)), verbs.ErrnoName(ve.Errno), t["zh"])
	emit.Emit(sandbox.Event{Type: sandbox.EvError, Call: ve.Call, Errno: int(ve.Errno), ErrnoName: verbs.ErrnoName(ve.Errno),
		Message: en, Messages: sandbox.Text{"en": en, "zh": zh}})
	return sandbox.Reported(err)
}

// wcError emits the error event for a failed work completion: the verbs
// call (ibv_post_send) worked, the operation did not. ErrnoName carries the
// completion status name, the closest thing to an errno a completion has.
func wcError(emit sandbox.Emitter, wc verbs.WC, why sandbox.Text) {
	emit.Emit(wcEvent(wc, why, false))
}

// wcExpected is wcError for a failure the experiment provokes on purpose
// (retry-budget's RETRY_EXC_ERR, rkey's wrong keys): the page labels it
// as intended instead of drawing an alarm (as perf-inline's refused post).
func wcExpected(emit sandbox.Emitter, wc verbs.WC, why sandbox.Text) {
	emit.Emit(wcEvent(wc, why, true))
}

func wcEvent(wc verbs.WC, why sandbox.Text, expected bool) sandbox.Event {
	en := fmt.Sprintf("work completion: %s (%s). %s", wc.Status.Description(), wc.Status, why["en"])
	zh := fmt.Sprintf("工作完成：%s（%s）。%s", wcStatusZh(wc.Status), wc.Status, why["zh"])
	return sandbox.Event{Type: sandbox.EvError, Call: "ibv_poll_cq", ErrnoName: wc.Status.String(), Expected: expected,
		Message: en, Messages: sandbox.Text{"en": en, "zh": zh}}
}

// wcStatusZh is a work completion status for a Chinese reader: the
// translation of ibv_wc_status_str's text for the common ones.
func wcStatusZh(st verbs.WCStatus) string {
	switch st.String() {
	case "IBV_WC_SUCCESS":
		return "成功"
	case "IBV_WC_REM_ACCESS_ERR":
		return "远端访问错误"
	case "IBV_WC_LOC_PROT_ERR":
		return "本地保护错误"
	case "IBV_WC_LOC_QP_OP_ERR":
		return "本地 QP 操作错误"
	case "IBV_WC_RETRY_EXC_ERR":
		return "传输重试次数超限"
	case "IBV_WC_RNR_RETRY_EXC_ERR":
		return "RNR 重试次数超限"
	case "IBV_WC_WR_FLUSH_ERR":
		return "工作请求被冲刷（QP 已进入错误状态）"
	case "IBV_WC_REM_INV_REQ_ERR":
		return "远端认为请求无效"
	case "IBV_WC_LOC_LEN_ERR":
		return "本地长度错误"
	case "IBV_WC_REM_OP_ERR":
		return "远端操作错误"
	}
	return st.Description()
}
