package web

import (
	"regexp"
	"strings"
	"sync"

	"github.com/rdmalab/rdmalab/sandbox"
)

// A program that fails usually says why in words the verbs library gave
// it: a work completion's status (ibv_wc_status_str) or a failing call's
// errno (perror). mistakes reads the program's output for those and says
// what each means and which section of the course teaches it (issue 44
// item 4: "No line with lkey=0x… in the output" named no cause). It is
// feedback only: whether the exercise passed is the check's, on evidence
// the program cannot print.

// mistake is one recognisable failure: what the output says, then the
// cause in both languages and the section that teaches it.
type mistake struct {
	re      *regexp.Regexp
	en, zh  string
	section string // a lesson URL with its anchor
}

var mistakes = []mistake{
	{regexp.MustCompile(`(?i)remote access error|IBV_WC_REM_ACCESS_ERR`),
		"The peer's device refused the operation (remote access error): the rkey or the address range is not one of its MRs', or the MR lacks the access the operation needs (IBV_ACCESS_REMOTE_WRITE for a WRITE). The requester's QP is now in ERROR.",
		"对端设备拒绝了这次操作（远程访问错误）：rkey 或地址范围不属于它的任何 MR，或者那个 MR 没有这个操作需要的权限（WRITE 需要 IBV_ACCESS_REMOTE_WRITE）。发起方的 QP 现在处于 ERROR 状态。",
		"/lessons/05-see-the-wire#nak"},
	{regexp.MustCompile(`(?i)RNR retry counter exceeded|IBV_WC_RNR_RETRY_EXC_ERR`),
		"The peer had no receive posted: each SEND needs a RECV waiting on the other side. The responder answered with RNR NAKs (receiver not ready), and this QP sent again after each until its rnr_retry ran out (set at RTS: 0–6 tries, 7 until the receiver is ready; the wait between tries is the responder's min_rnr_timer).",
		"对端没有投递接收请求：每个 SEND 都需要对端预先投递一个 RECV。响应方用 RNR NAK（接收方未就绪）回答，这个 QP 每次都等一等再发，直到 rnr_retry 用完（在迁移到 RTS 时设置：0 到 6 是次数，7 表示一直重发到接收方就绪；两次之间等多久由响应方的 min_rnr_timer 决定）。",
		"/lessons/05-see-the-wire#rnr-retry"},
	{regexp.MustCompile(`(?i)transport retry counter exceeded|IBV_WC_RETRY_EXC_ERR`),
		"No acknowledgement came back: the peer is gone, or this QP was connected to the wrong destination (QPN, GID or PSN). The requester resent until retry_cnt ran out.",
		"没有收到任何确认：对端不在了，或者这个 QP 连到了错误的目的地（QPN、GID 或 PSN 不对）。发起方一直重发，直到 retry_cnt 用完。",
		"/lessons/02-lossless-roce#retry-budget"},
	{regexp.MustCompile(`(?i)local protection error|IBV_WC_LOC_PROT_ERR`),
		"This side's device refused the buffer (local protection error): the lkey does not match the MR, or the address and length reach outside it.",
		"本端设备拒绝了这块缓冲区（本地保护错误）：lkey 与 MR 不符，或者地址和长度超出了 MR 的范围。",
		"/lessons/04-first-program#reg-mr"},
	{regexp.MustCompile(`(?i)local length error|IBV_WC_LOC_LEN_ERR`),
		"A length did not fit (local length error): a message larger than the receive buffer posted for it, or a length above what the QP allows.",
		"长度不合（本地长度错误）：消息比为它投递的接收缓冲区大，或者长度超过了 QP 允许的上限。",
		"/lessons/03-verbs-lifecycle#post-and-poll"},
	{regexp.MustCompile(`ibv_reg_mr[^\n]*(Invalid argument|EINVAL)`),
		"ibv_reg_mr refused the access flags (EINVAL): remote write and remote atomic access also need IBV_ACCESS_LOCAL_WRITE.",
		"ibv_reg_mr 拒绝了这组访问权限（EINVAL）：远程写和远程原子操作权限还必须带上 IBV_ACCESS_LOCAL_WRITE。",
		"/lessons/04-first-program#reg-mr"},
	{regexp.MustCompile(`ibv_reg_mr[^\n]*(Cannot allocate memory|ENOMEM)`),
		"ibv_reg_mr could not pin the pages (ENOMEM): the process's locked-memory limit (ulimit -l, RLIMIT_MEMLOCK) is below the buffer's size, however much memory the machine has free.",
		"ibv_reg_mr 无法钉住这些页（ENOMEM）：进程的锁定内存上限（ulimit -l，RLIMIT_MEMLOCK）小于缓冲区大小，与机器还剩多少空闲内存无关。",
		"/lessons/01-why-rdma#memlock"},
	{regexp.MustCompile(`ibv_modify_qp[^\n]*(Invalid argument|EINVAL)`),
		"ibv_modify_qp refused the move (EINVAL): a QP goes RESET → INIT → RTR → RTS one step at a time, each with the attributes that step needs in its mask.",
		"ibv_modify_qp 拒绝了这次状态迁移（EINVAL）：QP 必须按 RESET → INIT → RTR → RTS 一步一步走，每一步都要在掩码里给出那一步需要的属性。",
		"/lessons/03-verbs-lifecycle#state-machine"},
}

// explainMistakes is what the program's output shows went wrong, each
// cause once, in the order of the table, with the section that teaches
// it; nil when it shows none.
func explainMistakes(output string) []sandbox.Text {
	var out []sandbox.Text
	for _, m := range mistakes {
		if !m.re.MatchString(output) {
			continue
		}
		out = append(out, sandbox.Text{
			"en": m.en + " See " + m.section + ".",
			"zh": m.zh + "参见 " + m.section + "。",
		})
	}
	return out
}

// outputTail keeps the end of what a program printed, bounded, for
// explainMistakes (the guest bounds the output too; this is the web's
// own cap on what it scans).
type outputTail struct {
	mu sync.Mutex
	b  strings.Builder
}

const outputTailMax = 64 << 10

func (o *outputTail) add(s string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.b.Len()+len(s) > outputTailMax {
		return // the first 64 KiB say what failed first
	}
	o.b.WriteString(s)
	o.b.WriteByte('\n')
}

// String is what was kept.
func (o *outputTail) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}
