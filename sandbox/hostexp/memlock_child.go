package hostexp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/rdmalab/rdmalab/internal/errno"
	"github.com/rdmalab/rdmalab/sandbox/expkit"
)

// memlockHelperName is the hidden agent mode that performs one lock attempt
// in a fresh process, so the limit and the dropped capability never leak
// into the agent (or into the next attempt).
const memlockHelperName = "memlock-child"

// unlimited stands for RLIM_INFINITY in lockRequest and lockReply.
const unlimited = expkit.Unlimited

// lockRequest is one attempt: set RLIMIT_MEMLOCK, keep or drop
// CAP_IPC_LOCK, then mlock Size bytes.
type lockRequest struct {
	Limit       int64 `json:"limit"` // bytes, or unlimited
	Size        int64 `json:"size"`
	KeepIPCLock bool  `json:"keep_ipc_lock"`
}

// lockReply is what the child saw and got.
type lockReply struct {
	SoftLimit int64 `json:"soft_limit"` // in force during mlock; unlimited = -1
	HardLimit int64 `json:"hard_limit"`
	// LimitError is set when the requested limit could not be set (raising
	// the hard limit needs CAP_SYS_RESOURCE); the attempt then ran with
	// the soft limit at the hard limit.
	LimitError     string `json:"limit_error,omitempty"`
	LimitErrno     string `json:"limit_errno,omitempty"`
	CapIPCLock     bool   `json:"cap_ipc_lock"` // effective when mlock ran
	BoundingNote   string `json:"bounding_note,omitempty"`
	OK             bool   `json:"ok"`
	Errno          int    `json:"errno,omitempty"`
	ErrnoName      string `json:"errno_name,omitempty"`
	Error          string `json:"error,omitempty"`
	VmLck          int64  `json:"vmlck"` // bytes locked, from /proc/self/status, while locked
	MemAvailableAt int64  `json:"mem_available"`
}

// memlockHelper is the child's side: it reads a lockRequest, performs it on
// one locked OS thread and writes a lockReply.
func memlockHelper(_ context.Context, in io.Reader, out io.Writer) error {
	var req lockRequest
	if err := json.NewDecoder(in).Decode(&req); err != nil {
		return fmt.Errorf("memlock-child: read request: %w", err)
	}
	if req.Size <= 0 || req.Size > 1<<30 {
		return fmt.Errorf("memlock-child: size %d out of range", req.Size)
	}
	// Capabilities belong to a thread, and capable(CAP_IPC_LOCK) is checked
	// on the thread that calls mlock: drop and lock on this one thread.
	// Never unlocked, so the runtime retires the altered thread at exit.
	runtime.LockOSThread()
	rep := tryLock(req)
	return json.NewEncoder(out).Encode(rep)
}

func tryLock(req lockRequest) lockReply {
	var rep lockReply
	rep.MemAvailableAt, _ = expkit.MemAvailable()

	lim, err := expkit.SetLockLimit(req.Limit)
	if err != nil {
		rep.Error = err.Error()
		return rep
	}
	if lim.SetErr != nil {
		rep.LimitError = "setrlimit(RLIMIT_MEMLOCK): " + errText(lim.SetErr)
		rep.LimitErrno = errnoName(lim.SetErr)
	}
	rep.SoftLimit, rep.HardLimit = lim.Soft, lim.Hard

	if !req.KeepIPCLock {
		if err := expkit.DropIPCLock(); err != nil {
			rep.Error = err.Error()
			return rep
		}
		// The bounding set keeps an exec'd program from getting the
		// capability back; dropping it needs CAP_SETPCAP.
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_IPC_LOCK, 0, 0, 0); err != nil {
			rep.BoundingNote = "bounding set kept CAP_IPC_LOCK: prctl(PR_CAPBSET_DROP): " + errText(err)
		}
	}
	rep.CapIPCLock = expkit.HasEffective(unix.CAP_IPC_LOCK)

	mem, err := unix.Mmap(-1, 0, int(req.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		rep.Error = "mmap: " + errText(err)
		return rep
	}
	defer unix.Munmap(mem)
	if err := unix.Mlock(mem); err != nil {
		var errno syscall.Errno
		if errors.As(err, &errno) {
			rep.Errno, rep.ErrnoName = int(errno), unix.ErrnoName(errno)
		}
		rep.Error = errText(err)
		return rep
	}
	rep.OK = true
	rep.VmLck = expkit.StatusBytes("VmLck")
	_ = unix.Munlock(mem)
	return rep
}

func errText(err error) string {
	var e syscall.Errno
	if errors.As(err, &e) {
		return errno.Strerror(e)
	}
	return err.Error()
}

func errnoName(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return unix.ErrnoName(errno)
	}
	return ""
}
