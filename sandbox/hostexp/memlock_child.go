package hostexp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/rdmalab/rdmalab/sandbox"
)

// memlockHelperName is the hidden agent mode that performs one lock attempt
// in a fresh process, so the limit and the dropped capability never leak
// into the agent (or into the next attempt).
const memlockHelperName = "memlock-child"

// unlimited stands for RLIM_INFINITY in lockRequest and lockReply.
const unlimited = -1

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
	rep.MemAvailableAt, _ = memAvailable()

	var cur unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &cur); err != nil {
		rep.Error = "getrlimit: " + err.Error()
		return rep
	}
	want := uint64(req.Limit)
	if req.Limit == unlimited {
		want = unix.RLIM_INFINITY
	}
	// Lowering the soft limit is always allowed; setting it above the hard
	// limit means raising the hard limit, which needs CAP_SYS_RESOURCE.
	next := unix.Rlimit{Cur: want, Max: cur.Max}
	if want > cur.Max {
		next.Max = want
	}
	if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &next); err != nil {
		rep.LimitError = "setrlimit(RLIMIT_MEMLOCK): " + errText(err)
		rep.LimitErrno = errnoName(err)
		_ = unix.Setrlimit(unix.RLIMIT_MEMLOCK, &unix.Rlimit{Cur: cur.Max, Max: cur.Max})
	}
	var now unix.Rlimit
	_ = unix.Getrlimit(unix.RLIMIT_MEMLOCK, &now)
	rep.SoftLimit, rep.HardLimit = rlim(now.Cur), rlim(now.Max)

	if !req.KeepIPCLock {
		if err := dropIPCLock(); err != nil {
			rep.Error = err.Error()
			return rep
		}
		// The bounding set keeps an exec'd program from getting the
		// capability back; dropping it needs CAP_SETPCAP.
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_IPC_LOCK, 0, 0, 0); err != nil {
			rep.BoundingNote = "bounding set kept CAP_IPC_LOCK: prctl(PR_CAPBSET_DROP): " + errText(err)
		}
	}
	rep.CapIPCLock = hasEffective(unix.CAP_IPC_LOCK)

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
	rep.VmLck = vmLck()
	_ = unix.Munlock(mem)
	return rep
}

// dropIPCLock clears CAP_IPC_LOCK from this thread's effective, permitted
// and inheritable sets with capset(2), the call capsh makes.
func dropIPCLock() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	bit := uint32(1) << (unix.CAP_IPC_LOCK % 32)
	i := unix.CAP_IPC_LOCK / 32
	data[i].Effective &^= bit
	data[i].Permitted &^= bit
	data[i].Inheritable &^= bit
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset (drop CAP_IPC_LOCK): %w", err)
	}
	return nil
}

// hasEffective reports whether this thread holds capability c.
func hasEffective(c int) bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[c/32].Effective&(1<<(c%32)) != 0
}

// hasPermitted reports whether this thread could raise capability c.
func hasPermitted(c int) bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[c/32].Permitted&(1<<(c%32)) != 0
}

func rlim(v uint64) int64 {
	if v == unix.RLIM_INFINITY {
		return unlimited
	}
	return int64(v)
}

// vmLck reads the process's locked memory from /proc/self/status.
func vmLck() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmLck:"); ok {
			fields := strings.Fields(v)
			if len(fields) > 0 {
				kb, _ := strconv.ParseInt(fields[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

func errText(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return sandbox.Strerror(errno)
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
