package expkit

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Unlimited stands for RLIM_INFINITY in the limits the experiments pass
// around (and in their JSON between parent and child).
const Unlimited = -1

// Rlim converts a raw rlimit value to bytes, or Unlimited.
func Rlim(v uint64) int64 {
	if v == unix.RLIM_INFINITY {
		return Unlimited
	}
	return int64(v)
}

// LockLimit is RLIMIT_MEMLOCK as in force after SetLockLimit.
type LockLimit struct {
	Soft, Hard int64 // bytes, or Unlimited
	// SetErr is the setrlimit error when the requested limit could not be
	// set (raising the hard limit needs CAP_SYS_RESOURCE); the soft limit
	// was then put at the hard limit.
	SetErr error
}

// SetLockLimit sets this process's RLIMIT_MEMLOCK soft limit to limit
// (bytes, or Unlimited), raising the hard limit if it must. It is meant for
// a throw-away child process: the limit dies with it. The returned error is
// only a failed getrlimit; a refused setrlimit is LockLimit.SetErr.
func SetLockLimit(limit int64) (LockLimit, error) {
	var cur unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &cur); err != nil {
		return LockLimit{}, fmt.Errorf("getrlimit: %w", err)
	}
	want := uint64(limit)
	if limit < 0 {
		want = unix.RLIM_INFINITY
	}
	// Lowering the soft limit is always allowed; setting it above the hard
	// limit means raising the hard limit, which needs CAP_SYS_RESOURCE.
	var l LockLimit
	next := unix.Rlimit{Cur: want, Max: max(cur.Max, want)}
	if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &next); err != nil {
		l.SetErr = err
		_ = unix.Setrlimit(unix.RLIMIT_MEMLOCK, &unix.Rlimit{Cur: cur.Max, Max: cur.Max})
	}
	var now unix.Rlimit
	_ = unix.Getrlimit(unix.RLIMIT_MEMLOCK, &now)
	l.Soft, l.Hard = Rlim(now.Cur), Rlim(now.Max)
	return l, nil
}

// DropIPCLock clears CAP_IPC_LOCK from this thread's effective, permitted
// and inheritable sets with capset(2), the call capsh --drop makes.
// Capabilities belong to a thread and the kernel checks the one that pins,
// so the caller locks its OS thread first and pins on it.
func DropIPCLock() error {
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

// HasEffective reports whether this thread holds capability c.
func HasEffective(c int) bool {
	data, ok := capget()
	return ok && data[c/32].Effective&(1<<(c%32)) != 0
}

// HasPermitted reports whether this thread could raise capability c.
func HasPermitted(c int) bool {
	data, ok := capget()
	return ok && data[c/32].Permitted&(1<<(c%32)) != 0
}

func capget() ([2]unix.CapUserData, bool) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	err := unix.Capget(&hdr, &data[0])
	return data, err == nil
}

// LimitText is a limit for English text: "unlimited" or a byte count.
func LimitText(n int64) string {
	if n < 0 {
		return "unlimited"
	}
	return Human(n)
}

// LimitTextZh is LimitText in Chinese.
func LimitTextZh(n int64) string {
	if n < 0 {
		return "不限"
	}
	return Human(n)
}

// Kept says whether CAP_IPC_LOCK was kept ("kept") or dropped.
func Kept(b bool) string {
	if b {
		return "kept"
	}
	return "dropped"
}

// KeptZh is Kept in Chinese.
func KeptZh(b bool) string {
	if b {
		return "保留"
	}
	return "去掉"
}

// LimitFailure tells whether locking or registering size bytes failed
// because of the locked-memory limit, as the memlock experiments set it
// up to show: no CAP_IPC_LOCK, size above the soft limit (unlimited = -1),
// and the errno the kernel gives for that (ENOMEM; EPERM for a zero limit;
// EAGAIN). Such a failure is the lesson's point, and the page labels it
// as intended (sandbox.Event.Expected); any other failure stays an error.
func LimitFailure(size, softLimit int64, capIPCLock bool, errnoName string) bool {
	if capIPCLock || softLimit < 0 || size <= softLimit {
		return false
	}
	switch errnoName {
	case "ENOMEM", "EPERM", "EAGAIN":
		return true
	}
	return false
}
