package vm

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

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/hostrdma"
)

// Guest init: `labserver vm guest-init` is PID 1 of the lab guest (the
// kernel starts it via rdinit= with the arguments after "--"). Doing this in
// Go instead of a shell script saves a few dozen process starts, which cost
// tens of milliseconds each under TCG, and reports setup errors to the host
// through the agent's hello instead of a console nobody reads.

// setupErrFile carries a Soft-RoCE setup failure from init to the agent,
// which puts it in its hello so the host fails fast with the reason.
const setupErrFile = "/run/rdmalab-setup-error"

// shellParam on the kernel command line asks init for a root shell on the
// serial console (labserver vm shell).
const shellParam = "rdmalab.shell=1"

// PortLink is where init links the agent's virtio-serial port once the
// guest is set up (the path udev would create). The agent waits for it, so
// it can start while init still loads modules: its Go start-up, seconds
// under TCG, overlaps with the setup instead of following it.
const PortLink = "/dev/virtio-ports/" + PortName

// initMSFile carries init's duration to the agent's hello.
const initMSFile = "/run/rdmalab-init-ms"

// GuestInit prepares the guest and then supervises the agent forever. It
// only returns on a fatal error, after which the caller powers off.
// agentArgv is the agent's command line; PortLink is appended.
func GuestInit(agentArgv []string) error {
	start := time.Now()
	say := func(format string, a ...any) {
		fmt.Fprintf(os.Stdout, "rdmalab-guest: "+format+"\n", a...)
	}
	if err := mountAll(); err != nil {
		return err
	}
	os.Setenv("PATH", "/usr/sbin:/usr/bin")
	os.Setenv("HOME", "/root")
	_ = unix.Sethostname([]byte("rdmalab-guest"))
	say("init at uptime %s", uptime())

	argv := append(append([]string{}, agentArgv...), PortLink)
	agent, err := spawn(argv, false)
	if err != nil {
		return fmt.Errorf("start agent: %w", err)
	}

	setupErr := loadModules(guestModuleList)
	say("modules loaded at uptime %s", uptime())
	if setupErr == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		setupErr = hostrdma.SetupSoftRoCE(ctx, hostrdma.GuestTopology)
		cancel()
	}
	if setupErr != nil {
		say("Soft-RoCE setup FAILED: %v", setupErr)
		_ = os.WriteFile(setupErrFile, []byte(setupErr.Error()), 0o644)
	} else {
		say("Soft-RoCE ready at uptime %s (rxe0, rxe1 on veth0/veth1)", uptime())
	}
	port, err := findPort(PortName, 10*time.Second)
	if err != nil {
		return err
	}
	_ = os.WriteFile(initMSFile, []byte(fmt.Sprint(time.Since(start).Milliseconds())), 0o644)
	if err := os.MkdirAll(filepath.Dir(PortLink), 0o755); err != nil {
		return err
	}
	if err := os.Symlink(port, PortLink); err != nil {
		return fmt.Errorf("link agent port: %w", err)
	}
	say("agent %d serves %s at uptime %s", agent, port, uptime())
	go func() {
		if err := loadModules(guestLateModuleList); err != nil {
			say("late modules: %v", err)
		}
	}()

	shell := 0
	if cmdline, _ := os.ReadFile("/proc/cmdline"); strings.Contains(string(cmdline), shellParam) {
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
			if agent, err = spawn(argv, false); err != nil {
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

func mountAll() error {
	for _, m := range []struct {
		src, dst, fs string
		mode         os.FileMode
	}{
		{"proc", "/proc", "proc", 0o555},
		{"sysfs", "/sys", "sysfs", 0o555},
		{"devtmpfs", "/dev", "devtmpfs", 0o755},
		{"devpts", "/dev/pts", "devpts", 0o755},
		{"tmpfs", "/dev/shm", "tmpfs", 0o1777},
		{"tmpfs", "/run", "tmpfs", 0o755},
	} {
		if err := os.MkdirAll(m.dst, m.mode); err != nil {
			return fmt.Errorf("mkdir %s: %w", m.dst, err)
		}
		if err := unix.Mount(m.src, m.dst, m.fs, unix.MS_NOSUID, ""); err != nil && !errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("mount %s on %s: %w", m.fs, m.dst, err)
		}
	}
	return nil
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
		if err := hostrdma.LoadModuleFile(m); err != nil {
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

// WaitPort waits until init has linked the agent port (the guest is set
// up) and opens it.
func WaitPort(ctx context.Context, path string) (*os.File, error) {
	for {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// GuestHello is the agent's hello inside the guest: kernel, uptime, the
// init's setup error if any. Call it after WaitPort.
func GuestHello() Hello {
	h := Hello{}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		h.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	if b, err := os.ReadFile("/proc/uptime"); err == nil {
		fmt.Sscanf(string(b), "%f", &h.Uptime)
	}
	if b, err := os.ReadFile(setupErrFile); err == nil {
		h.SetupErr = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile(initMSFile); err == nil {
		fmt.Sscanf(string(b), "%d", &h.InitMS)
	}
	return h
}

// GuestLab describes the guest's RDMA devices now (the agent's answer to a
// lab request).
func GuestLab(ctx context.Context) sandbox.Lab {
	lab := sandbox.Lab{Backend: "vm", State: StateReady, Devices: []sandbox.Device{}}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		lab.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	devs, err := hostrdma.Devices()
	if err != nil {
		lab.State, lab.Reason = StateFailed, err.Error()
		return lab
	}
	if len(devs) == 0 {
		lab.State, lab.Reason = StateFailed, "the guest has no RDMA devices"
	}
	lab.Devices = append(lab.Devices, devs...)
	return lab
}
