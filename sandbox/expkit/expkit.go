// Package expkit is what the experiment packages (hostexp, rdmaexp) share:
// the bilingual event helpers, byte and limit formatting, /proc readers, the
// child-side setup of a locked-memory attempt (RLIMIT_MEMLOCK, dropping
// CAP_IPC_LOCK) and the params of the two locked-memory experiments
// (memlock on the host, reg-mr on an RDMA device). It keeps their event
// output identical without each package carrying its own copy.
package expkit

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/sandbox"
)

// Say builds learner-facing text in both languages.
func Say(en, zh string) sandbox.Text { return sandbox.Text{"en": en, "zh": zh} }

// Phase emits a phase event with a bilingual title.
func Phase(emit sandbox.Emitter, name string, t sandbox.Text) {
	emit.Emit(sandbox.Event{Type: sandbox.EvPhase, Name: name, Message: t["en"], Messages: t})
}

// Logf emits an informational log line (English only: logs are the
// machine's voice, verdicts are the lesson's).
func Logf(emit sandbox.Emitter, format string, args ...any) {
	emit.Emit(sandbox.Event{Type: sandbox.EvLog, Level: "info", Message: fmt.Sprintf(format, args...)})
}

// Note emits a bilingual log line the learner should read.
func Note(emit sandbox.Emitter, level string, t sandbox.Text) {
	emit.Emit(sandbox.Event{Type: sandbox.EvLog, Level: level, Message: t["en"], Messages: t})
}

// Result emits the verdict with its figures.
func Result(emit sandbox.Emitter, ok bool, t sandbox.Text, figs map[string]float64) {
	emit.Emit(sandbox.Event{Type: sandbox.EvResult, OK: &ok, Message: t["en"], Messages: t, Figures: figs})
}

// Human formats a byte count for text ("64 KiB", "1.5 MiB", "2 B").
func Human(n int64) string {
	trim := func(f float64) string { return strings.TrimSuffix(strconv.FormatFloat(f, 'f', 1, 64), ".0") }
	switch {
	case n >= 1<<30:
		return trim(float64(n)/(1<<30)) + " GiB"
	case n >= 1<<20:
		return trim(float64(n)/(1<<20)) + " MiB"
	case n >= 1<<10:
		return trim(float64(n)/(1<<10)) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " B"
}

// B2F is a figure for a yes/no outcome: 1 or 0.
func B2F(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// errnoZh is the C library's message of common errnos in Chinese.
var errnoZh = map[string]string{
	"ENOMEM": "无法分配内存", "EPERM": "不允许的操作", "EACCES": "权限不足", "EINVAL": "参数无效",
	"EFAULT": "地址错误", "EAGAIN": "资源暂时不可用", "ENODEV": "没有这个设备", "ENOENT": "没有这个文件或目录",
	"EBUSY": "设备或资源忙", "ETIMEDOUT": "连接超时", "ECONNREFUSED": "连接被拒绝", "EIO": "输入/输出错误",
	// errno 95 has two names on Linux
	"EOPNOTSUPP": "不支持该操作", "ENOTSUP": "不支持该操作", "ENOSYS": "功能未实现", "EBADF": "错误的文件描述符",
}

// ErrnoZh is an errno's message for a Chinese reader: the translation of
// a common errno, else the system's own text.
func ErrnoZh(name, system string) string {
	if s, ok := errnoZh[name]; ok {
		return s
	}
	return system
}
