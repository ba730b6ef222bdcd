package vmguest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmalab/rdmalab/machines/vmproto"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/rxedev"
)

// The guest boots like this (the order matters for boot time: a Go
// program's start-up costs one to several seconds under TCG, so the boot
// pays for exactly one, in parallel with loading the modules):
//
//  1. /init, a dash script written by the image build (initscript.Script), starts
//     the agent (`labagent --serve vmproto.PortLink`) in the background,
//     mounts the file systems, loads the modules with busybox modprobe
//     (crc32_generic first), marks that with vmproto.ModulesDone, and execs
//     `labagent guest-init AGENT_PID`.
//  2. The agent, once its Go start-up is over and the modules are in,
//     sets up Soft-RoCE (veth0/veth1, rxe0/rxe1, the wire routing) over
//     netlink, links the virtio-serial port to vmproto.PortLink and says hello to
//     the host: the guest is ready (PrepareGuest).
//  3. guest-init, now PID 1, loads the late modules, reaps orphans,
//     restarts the agent if it dies, and starts a root shell on the
//     console for `labserver vm shell`.

// GuestInit is PID 1 once /init has done its part: it supervises the agent
// (agentPID, started by /init; restarted with agentArgv) forever. It only
// returns when the shell of `labserver vm shell` exits or on a fatal error;
// the caller then powers off.
func GuestInit(agentPID int, agentArgv []string) error {
	say := func(format string, a ...any) {
		fmt.Fprintf(os.Stdout, "rdmalab-guest: "+format+"\n", a...)
	}
	agent := agentPID
	go func() {
		// Off the critical path: after the agent is up.
		for {
			if _, err := os.Lstat(vmproto.PortLink); err == nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err := loadModules(vmproto.LateModuleList); err != nil {
			say("late modules: %v", err)
		}
	}()
	shell := 0
	if cmdline, _ := os.ReadFile("/proc/cmdline"); strings.Contains(string(cmdline), vmproto.ShellParam) {
		var err error
		if shell, err = spawnShell(); err != nil {
			say("no shell: %v", err)
		}
	}
	var restarts []time.Time
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if err != nil {
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if errors.Is(err, syscall.ECHILD) {
				time.Sleep(time.Second)
				continue
			}
			return fmt.Errorf("wait: %w", err)
		}
		switch pid {
		case shell:
			say("shell exited; powering off")
			return nil
		case agent:
			// A crashed agent is restarted in place, which is faster than
			// the host rebooting the guest; a crash loop powers off so the
			// host boots a fresh guest and reports the console.
			restarts = append(restarts, time.Now())
			if len(restarts) > 3 && time.Since(restarts[len(restarts)-4]) < time.Minute {
				return fmt.Errorf("agent keeps dying (last: %s)", describeWait(ws))
			}
			say("agent exited (%s); restarting", describeWait(ws))
			time.Sleep(200 * time.Millisecond)
			if agent, err = spawn(append(agentArgv, vmproto.PortLink), false); err != nil {
				return fmt.Errorf("restart agent: %w", err)
			}
		}
		// any other pid: an orphan reaped, as PID 1 must
	}
}

// PowerOff ends the guest; with -no-reboot QEMU then exits.
func PowerOff() {
	syscall.Sync()
	_ = unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
	select {} // PID 1 must not return
}

// loadModules loads the modules of a list file in the order the image
// build recorded.
func loadModules(list string) error {
	b, err := os.ReadFile("/" + list)
	if err != nil {
		return fmt.Errorf("module list: %w", err)
	}
	type took struct {
		name string
		d    time.Duration
	}
	var slow []took
	for _, m := range strings.Fields(string(b)) {
		t := time.Now()
		if err := rxedev.LoadModuleFile(m); err != nil {
			return err
		}
		slow = append(slow, took{strings.TrimSuffix(filepath.Base(m), ".ko"), time.Since(t)})
	}
	// The three slowest loads on the console: boot time under TCG matters.
	sort.Slice(slow, func(i, j int) bool { return slow[i].d > slow[j].d })
	var top []string
	for _, s := range slow[:min(3, len(slow))] {
		top = append(top, fmt.Sprintf("%s %dms", s.name, s.d.Milliseconds()))
	}
	fmt.Fprintf(os.Stdout, "rdmalab-guest: %s: %d modules; slowest: %s\n", filepath.Base(list), len(slow), strings.Join(top, ", "))
	return nil
}

// findPort waits for the virtio-serial port called name and returns its
// device node. Without udev there is no /dev/virtio-ports/NAME link, so we
// read the names from sysfs.
func findPort(name string, wait time.Duration) (string, error) {
	deadline := time.Now().Add(wait)
	for {
		dirs, _ := filepath.Glob("/sys/class/virtio-ports/*")
		for _, d := range dirs {
			n, err := os.ReadFile(filepath.Join(d, "name"))
			if err == nil && strings.TrimSpace(string(n)) == name {
				dev := "/dev/" + filepath.Base(d)
				if _, err := os.Stat(dev); err == nil {
					return dev, nil
				}
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("virtio-serial port %q not found after %s", name, wait)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// spawn starts argv with the console as stdio. It does not use os/exec:
// PID 1 reaps every child with wait4(-1), which would race exec.Cmd.Wait.
func spawn(argv []string, tty bool) (int, error) {
	attr := &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	}
	if tty {
		f, err := os.OpenFile("/dev/ttyS0", os.O_RDWR, 0)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		attr.Files = []uintptr{f.Fd(), f.Fd(), f.Fd()}
		attr.Sys.Setctty = true
		attr.Sys.Ctty = 0
		attr.Env = append(attr.Env, "TERM=vt100", `PS1=rdmalab-guest# `)
		attr.Dir = "/root"
	}
	return syscall.ForkExec(argv[0], argv, attr)
}

func spawnShell() (int, error) {
	for _, sh := range []string{"/usr/bin/bash", "/usr/bin/dash"} {
		if _, err := os.Stat(sh); err == nil {
			return spawn([]string{sh, "-i"}, true)
		}
	}
	return 0, errors.New("no shell in the image")
}

func describeWait(ws syscall.WaitStatus) string {
	if ws.Signaled() {
		return "signal " + unix.SignalName(ws.Signal())
	}
	return fmt.Sprintf("exit status %d", ws.ExitStatus())
}

func uptime() string {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0] + "s"
}

// PrepareGuest is the agent's part of the boot (see the top of this
// file): wait for /init's modules, set up Soft-RoCE, link the port to path
// and open it. An agent restarted later finds path linked and just opens
// it. A setup failure is recorded for the hello, not returned: the host
// must hear why the guest is useless.
func PrepareGuest(ctx context.Context, path string) (*os.File, error) {
	if _, err := os.Lstat(path); err != nil {
		fmt.Fprintf(os.Stdout, "rdmalab-guest: agent started at uptime %s\n", uptime())
		if err := waitFile(ctx, vmproto.ModulesDone); err != nil {
			return nil, err
		}
		if _, err := os.Stat(vmproto.SetupErrFile); err != nil { // modules loaded
			sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			err := rxedev.SetupSoftRoCE(sctx, rxedev.GuestTopology)
			cancel()
			if err != nil {
				_ = os.WriteFile(vmproto.SetupErrFile, []byte(err.Error()), 0o644)
				fmt.Fprintf(os.Stdout, "rdmalab-guest: Soft-RoCE setup FAILED: %v\n", err)
			} else {
				fmt.Fprintf(os.Stdout, "rdmalab-guest: Soft-RoCE ready at uptime %s (rxe0, rxe1 on veth0/veth1)\n", uptime())
			}
		}
		port, err := findPort(vmproto.PortName, 10*time.Second)
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, err
		}
		if err := os.Symlink(port, path); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("link agent port: %w", err)
		}
	}
	return os.OpenFile(path, os.O_RDWR, 0)
}

func waitFile(ctx context.Context, path string) error {
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// GuestHello is the agent's hello inside the guest: kernel, uptime, the
// init's setup error if any. Call it after WaitPort.
func GuestHello() vmproto.Hello {
	h := vmproto.Hello{}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		h.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	if b, err := os.ReadFile("/proc/uptime"); err == nil {
		fmt.Sscanf(string(b), "%f", &h.Uptime)
	}
	if b, err := os.ReadFile(vmproto.SetupErrFile); err == nil {
		h.SetupErr = strings.TrimSpace(string(b))
	}
	return h
}

// GuestLab describes the guest's RDMA devices now (the agent's answer to a
// lab request).
func GuestLab(ctx context.Context) sandbox.Lab {
	lab := sandbox.Lab{Backend: "vm", State: sandbox.LabReady, Devices: []sandbox.Device{}}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		lab.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	devs, err := rxedev.Devices()
	if err != nil {
		lab.State, lab.Reason = sandbox.LabFailed, sandbox.Detail("cannot read the guest's RDMA devices", "无法读取虚拟机的 RDMA 设备", err.Error())
		return lab
	}
	if len(devs) == 0 {
		lab.State, lab.Reason = sandbox.LabFailed, sandbox.Text{"en": "the guest has no RDMA devices", "zh": "虚拟机里没有 RDMA 设备"}
	}
	lab.Devices = append(lab.Devices, devs...)
	return lab
}
