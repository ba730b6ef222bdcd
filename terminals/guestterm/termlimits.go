package guestterm

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Limits of a learner's shells inside their guest (cgroup v2; the guest
// kernel, Debian's, has it). Every shell runs in a cgroup of its own under
// one "learner" cgroup whose limits bound all of the learner's shells
// together, so the guest's agent (which answers the host's pings, and runs
// the lab's own checks) keeps memory, processes and CPU whatever the
// learner starts:
//
//   - memory.max: the guest's available memory when the first shell starts
//     less termReserve (the kernel OOM-kills inside the learner's cgroup,
//     never the agent);
//   - pids.max: termPids processes and threads (a fork bomb stops there);
//   - cpu.max: termCPUShare of the guest's vCPUs (the agent gets the rest).
//
// The shell runs as an ordinary user (terminal.go), so it cannot leave
// its cgroup or change these limits (root's files). Output is bounded by termRate (terminal.go). On the host, the
// guest's RAM is QEMU's -m and its CPU is niced (machines/vm Config.Nice).
const (
	cgroupRoot   = "/sys/fs/cgroup"
	learnerGroup = cgroupRoot + "/learner"
	termReserve  = 40 << 20 // bytes kept for the agent and the kernel
	termPids     = 256
	termCPUShare = 0.75
)

var (
	learnerOnce sync.Once
	learnerErr  error
)

// setupLearnerGroup mounts cgroup2 (the guest's /init does not) and makes
// the learner cgroup with its limits, once.
func setupLearnerGroup() error {
	learnerOnce.Do(func() { learnerErr = makeLearnerGroup() })
	return learnerErr
}

func makeLearnerGroup() error {
	if _, err := os.Stat(cgroupRoot + "/cgroup.controllers"); err != nil {
		if err := os.MkdirAll(cgroupRoot, 0o755); err != nil {
			return err
		}
		if err := unix.Mount("cgroup2", cgroupRoot, "cgroup2", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("mount cgroup2: %w", err)
		}
	}
	if err := writeFile(cgroupRoot+"/cgroup.subtree_control", "+cpu +memory +pids"); err != nil {
		return err
	}
	if err := os.Mkdir(learnerGroup, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	mem := memAvailable() - termReserve
	mem = max(mem, 32<<20)
	period := 100000
	quota := int(termCPUShare * float64(runtime.NumCPU()) * float64(period))
	for f, v := range map[string]string{
		"memory.max":      strconv.FormatInt(mem, 10),
		"memory.swap.max": "0",
		"pids.max":        strconv.Itoa(termPids),
		"cpu.max":         fmt.Sprintf("%d %d", quota, period),
	} {
		if err := writeFile(filepath.Join(learnerGroup, f), v); err != nil && f != "memory.swap.max" {
			return err
		}
	}
	return nil
}

// termGroup is one shell's cgroup: its processes, to kill them all.
type termGroup struct {
	dir string
	fd  int
}

// newTermGroup makes the cgroup for shell id under the learner cgroup.
func newTermGroup(id uint64) (*termGroup, error) {
	return newLearnerGroup("term-" + strconv.FormatUint(id, 10))
}

// newLearnerGroup makes cgroup name under the learner cgroup: a shell's,
// or a learner program's (program.go).
func newLearnerGroup(name string) (*termGroup, error) {
	if err := setupLearnerGroup(); err != nil {
		return nil, err
	}
	dir := filepath.Join(learnerGroup, name)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, err
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return &termGroup{dir: dir, fd: fd}, nil
}

// place makes the shell start inside the cgroup (clone3 CLONE_INTO_CGROUP:
// no moment outside it).
func (g *termGroup) place(attr *syscall.SysProcAttr) {
	attr.UseCgroupFD = true
	attr.CgroupFD = g.fd
}

// kill ends every process in the cgroup at once (cgroup.kill: a fork
// bomb cannot outrun it).
func (g *termGroup) kill() { _ = writeFile(filepath.Join(g.dir, "cgroup.kill"), "1") }

// remove deletes the empty cgroup.
func (g *termGroup) remove() {
	unix.Close(g.fd)
	for range 50 {
		if err := os.Remove(g.dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		g.kill()
		time.Sleep(20 * time.Millisecond)
	}
}

func writeFile(path, v string) error {
	if err := os.WriteFile(path, []byte(v), 0o644); err != nil {
		return fmt.Errorf("cgroup: %w", err)
	}
	return nil
}

// memAvailable is MemAvailable of /proc/meminfo in bytes.
func memAvailable() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
