package vm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmalab/rdmalab/internal/fsutil"
	"github.com/rdmalab/rdmalab/machines/vmimage"
	"github.com/rdmalab/rdmalab/machines/vmproto"
)

// Accelerators.
const (
	AccelKVM = "kvm"
	AccelTCG = "tcg"
)

// kvmUsable opens /dev/kvm and creates a VM, the cheap part of "does KVM
// work". It is not the whole answer: under a nested hypervisor (kvm_pvm) the
// ioctls succeed and a stock kernel still cannot run, so the first boot
// with KVM is the real probe (see Backend.boot).
func kvmUsable() error {
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("no usable /dev/kvm: %w", err)
	}
	defer f.Close()
	const kvmGetAPIVersion, kvmCreateVM = 0xAE00, 0xAE01
	v, err := unix.IoctlRetInt(int(f.Fd()), kvmGetAPIVersion)
	if err != nil || v != 12 {
		return fmt.Errorf("/dev/kvm: API version %d, %v", v, err)
	}
	vm, err := unix.IoctlRetInt(int(f.Fd()), kvmCreateVM)
	if err != nil {
		return fmt.Errorf("/dev/kvm: cannot create a VM: %w", err)
	}
	unix.Close(vm)
	return nil
}

// accelRecord is the verdict of a KVM probe boot, remembered in the image
// cache per host kernel and QEMU version: later starts go straight to the
// accelerator that works instead of probing KVM again.
type accelRecord struct {
	Key    string `json:"key"`
	Accel  string `json:"accel"`
	Reason string `json:"reason"`
}

// accelKey names what decides whether KVM can run the guest: the host
// kernel (its release and build) and the QEMU binary (its version line, its
// size and time). The guest image is deliberately not in it: it changes
// with every labserver build, and re-probing then cost every restart the
// probe.
func accelKey(qemu string) string {
	fi, err := os.Stat(qemu)
	if err != nil {
		return ""
	}
	var u unix.Utsname
	_ = unix.Uname(&u)
	return fmt.Sprintf("host %s %s; %s %s (%d bytes, %d)", unix.ByteSliceToString(u.Release[:]),
		unix.ByteSliceToString(u.Version[:]), qemu, qemuVersionCached(qemu), fi.Size(), fi.ModTime().Unix())
}

// qemuVersion is the first line of `qemu --version`, "" if it says nothing.
func qemuVersion(qemu string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, qemu, "--version").Output()
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(line)
}

func loadAccelRecord(dir, key string) *accelRecord {
	b, err := os.ReadFile(filepath.Join(dir, "accel.json"))
	if err != nil {
		return nil
	}
	var r accelRecord
	if json.Unmarshal(b, &r) != nil || r.Key != key || key == "" {
		return nil
	}
	return &r
}

func saveAccelRecord(dir string, r accelRecord) {
	b, _ := json.Marshal(r)
	_ = fsutil.WriteFileAtomic(filepath.Join(dir, "accel.json"), b)
}

// chooseAccel says which accelerator to boot with and why not KVM; probe
// is true when KVM has not been tried with this host kernel and QEMU yet.
func chooseAccel(cfg Config, qemu string) (accel, why string, probe bool) {
	switch cfg.Accel {
	case AccelKVM, AccelTCG:
		return cfg.Accel, "requested", false
	}
	if err := kvmUsable(); err != nil {
		return AccelTCG, err.Error(), false
	}
	if r := loadAccelRecord(cfg.Dir, accelKey(qemu)); r != nil {
		return r.Accel, r.Reason, false
	}
	return AccelKVM, "", true
}

// qemuArgs is the command line of one guest. The guest has no NIC at all;
// the only ways in and out are the agent port and the console, which QEMU
// writes into the FIFO at consoleFIFO (the host keeps it capped: console.go).
func qemuArgs(cfg Config, im *vmimage.Image, accel, sock, consoleFIFO string, shell bool) []string {
	var a []string
	switch accel {
	case AccelKVM:
		a = []string{"-accel", "kvm", "-cpu", "host"}
	default:
		a = []string{"-accel", "tcg,thread=multi", "-cpu", "max"}
	}
	// cryptomgr.notests skips the crypto self-tests, which run the
	// algorithms in software at boot: over a second under TCG (measured
	// with initcall_debug: crypto_algapi_init). 8250.nr_uarts=1: we have one
	// serial port, probing four costs a tenth of a second.
	// no_timer_check: on a loaded host a TCG guest's timer can look broken
	// to the kernel's boot check, which then panics ("IO-APIC + timer
	// doesn't work!", seen under load 30 on 2 cores).
	kargs := []string{"console=ttyS0", "quiet", "panic=-1", "mitigations=off",
		"cryptomgr.notests", "8250.nr_uarts=1", "no_timer_check"}
	if shell {
		kargs = append(kargs, vmproto.ShellParam)
	}
	if cfg.Append != "" {
		kargs = append(kargs, cfg.Append)
	}
	serial := []string{"-chardev", "pipe,id=con,path=" + consoleFIFO, "-serial", "chardev:con"}
	if shell {
		serial = []string{"-chardev", "stdio,id=con,signal=off", "-serial", "chardev:con"}
	}
	a = append(a,
		"-name", "rdmalab-guest",
		"-smp", fmt.Sprint(cfg.CPUs), "-m", fmt.Sprint(cfg.MemoryMiB),
		"-nodefaults", "-no-user-config", "-display", "none", "-monitor", "none",
		"-nic", "none", "-no-reboot",
		"-kernel", im.KernelPath(), "-initrd", im.InitrdPath(),
		"-append", strings.Join(kargs, " "),
	)
	a = append(a, serial...)
	a = append(a,
		"-device", "virtio-serial-pci,id=vser",
		"-chardev", "socket,id=agent,path="+sock+",server=on,wait=off",
		"-device", "virtserialport,bus=vser.0,chardev=agent,name="+vmproto.PortName,
		// QMP, for snapshots (migration to a file) and restores.
		"-qmp", "unix:"+qmpPath(sock)+",server=on,wait=off",
	)
	if d := im.DiskPath(); d != "" {
		// The on-demand disk (vmimage/disk.go), in every guest, cold or
		// restored: a snapshot restores only into the same set of devices.
		// readonly=on: QEMU opens the file read-only and fails the guest's
		// writes, so not even the guest's root can change what every guest
		// shares; many QEMUs share it (shared locks).
		a = append(a,
			"-drive", "file="+qemuOptQuote(d)+",if=none,id=demand,format=raw,readonly=on",
			"-device", "virtio-blk-pci,drive=demand,serial="+vmproto.DemandDiskSerial)
	}
	return a
}

// qemuOptQuote escapes a value inside a QEMU -drive option list, where a
// comma separates options and ",," is a literal comma.
func qemuOptQuote(s string) string { return strings.ReplaceAll(s, ",", ",,") }

// qmpPath is the QMP socket beside the agent socket.
func qmpPath(agentSock string) string { return filepath.Join(filepath.Dir(agentSock), "qmp.sock") }

// consoleTail is the end of the console log, for failure reasons.
func consoleTail(path string, lines int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const max = 8 << 10
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max64(0, fi.Size()-max)
	buf := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil {
		return ""
	}
	ls := strings.Split(strings.TrimRight(strings.ReplaceAll(string(buf), "\r", ""), "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// errBootTimeout is a guest whose agent did not say hello in time.
var errBootTimeout = errors.New("the guest did not come up")

// startNiced starts cmd at niceness nice (0: as this process), forked
// from a spawner thread that lives as long as this process.
//
// A child inherits the niceness of the thread that forks it, and its
// Pdeathsig fires when that thread ends, not the process. Starts used to
// fork from whatever thread their goroutine was on, and a learner's
// QEMU from a reniced thread that exited with the machine; a goroutine
// that locks its thread locks whatever thread it is on, so a thread that
// had forked an experiment guest could become a learner machine's
// thread and take the experiment guest with it when it exited (issue 43
// fall 9). Now every QEMU is forked from one spawner thread per
// niceness, locked and never ending: a guest dies with labserver, never
// with another guest.
func startNiced(cmd *exec.Cmd, nice int) error {
	sp, err := spawnerFor(max(nice, 0))
	if err != nil {
		return err
	}
	req := spawnReq{cmd: cmd, err: make(chan error, 1)}
	sp <- req
	return <-req.err
}

// spawnReq asks a spawner thread to start cmd.
type spawnReq struct {
	cmd *exec.Cmd
	err chan error
}

var spawners struct {
	mu   sync.Mutex
	m    map[int]chan spawnReq
	errs map[int]error // a niceness the thread could not take, said again at each start
}

// spawnerFor is the spawner thread of niceness nice, started at its first
// use; an error when the thread could not be reniced.
func spawnerFor(nice int) (chan spawnReq, error) {
	spawners.mu.Lock()
	defer spawners.mu.Unlock()
	if sp := spawners.m[nice]; sp != nil {
		return sp, nil
	}
	if err := spawners.errs[nice]; err != nil {
		return nil, err
	}
	sp := make(chan spawnReq)
	errc := make(chan error, 1)
	go func() {
		// Never unlocked and never returning: the thread must outlive
		// every child forked on it, also one forked there before this
		// goroutine locked it.
		runtime.LockOSThread()
		var err error
		if nice > 0 {
			if e := unix.Setpriority(unix.PRIO_PROCESS, 0, nice); e != nil {
				err = fmt.Errorf("nice %d: %w", nice, e)
			}
		}
		errc <- err
		if err != nil {
			select {} // a thread of unknown niceness serves no one
		}
		for req := range sp {
			req.err <- req.cmd.Start()
		}
	}()
	if spawners.m == nil {
		spawners.m, spawners.errs = map[int]chan spawnReq{}, map[int]error{}
	}
	if err := <-errc; err != nil {
		spawners.errs[nice] = err
		return nil, err
	}
	spawners.m[nice] = sp
	return sp, nil
}
