package rdmaexp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/machines/demanddisk"
)

// NVMe over Fabrics plumbing for lesson 08: a target configured through
// configfs (nvmetcli is not packaged in Debian 12), a host connected with
// nvme-cli, and the clean-up that removes both — run by a guard process
// that outlives the experiment, so a cancelled run (the agent is killed)
// leaves no controller, target or module behind either.

const (
	// nvmeofNQNPrefix marks every subsystem the lab creates: the clean-up
	// removes only those.
	nvmeofNQNPrefix = "nqn.2026-12.lab.rdmalab:"
	// nvmeofNQN is the one subsystem the experiment exports.
	nvmeofNQN = nvmeofNQNPrefix + "null0"
	// nvmeofPortRDMA, nvmeofPortTCP: the target's port ids in configfs,
	// unlikely to clash with an administrator's (they number from 1).
	nvmeofPortRDMA = "2701"
	nvmeofPortTCP  = "2702"
	// nvmeofSvcID is the NVMe-oF service id (4420 is IANA's for both).
	nvmeofSvcID = "4420"
	nvmetRoot   = "/sys/kernel/config/nvmet"
)

// nvmeofModules are the kernel modules the experiment loads, in load
// order: null_blk gives the namespace's block device (nr_devices=1, 1 GiB,
// not memory backed: reads cost no RAM), then the target and the host over
// both transports. The guest image carries them without loading them
// (vmimage's demandModules).
var nvmeofModules = []struct{ name, params string }{
	{"null_blk", "nr_devices=1 gb=1"},
	{"nvmet_rdma", ""}, {"nvmet_tcp", ""},
	{"nvme_rdma", ""}, {"nvme_tcp", ""},
}

// nvmeofUnload is every module the run may have brought in, dependents
// first; only those absent before the run are removed.
var nvmeofUnload = []string{"nvme_rdma", "nvme_tcp", "nvme_fabrics", "nvme", "nvme_core",
	"nvmet_rdma", "nvmet_tcp", "nvmet", "null_blk"}

func moduleLoaded(name string) bool {
	_, err := os.Stat("/sys/module/" + name)
	return err == nil
}

// loadNVMeoFModules loads the modules with modprobe (busybox's in the
// guest, which reads the modules.dep the image build wrote).
func loadNVMeoFModules(ctx context.Context) error {
	// The module files are on the guest's on-demand disk (modules.dep,
	// in the initramfs, names them there).
	if err := demanddisk.Mount(ctx); err != nil {
		return err
	}
	for _, m := range nvmeofModules {
		if moduleLoaded(m.name) {
			continue
		}
		args := append([]string{m.name}, strings.Fields(m.params)...)
		if out, err := exec.CommandContext(ctx, "modprobe", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("modprobe %s: %w: %s (this kernel needs CONFIG_NVME_TARGET_RDMA, CONFIG_NVME_TARGET_TCP, CONFIG_NVME_RDMA, CONFIG_NVME_TCP and CONFIG_BLK_DEV_NULL_BLK as modules)", m.name, err, tail(string(out)))
		}
	}
	if _, err := os.Stat(nvmetRoot); err != nil {
		// configfs is not mounted (the guest mounts only what it needs)
		if err := exec.CommandContext(ctx, "mount", "-t", "configfs", "none", "/sys/kernel/config").Run(); err != nil {
			return fmt.Errorf("mount configfs on /sys/kernel/config: %w", err)
		}
		if _, err := os.Stat(nvmetRoot); err != nil {
			return fmt.Errorf("nvmet's configfs tree: %w", err)
		}
	}
	return nil
}

// writeAttr writes one configfs attribute.
func writeAttr(path, v string) error {
	if err := os.WriteFile(path, []byte(v), 0o644); err != nil {
		return fmt.Errorf("configfs: write %q to %s: %w", v, path, err)
	}
	return nil
}

// exportNVMeoF makes the target: one subsystem open to any host, namespace
// 1 on /dev/nullb0, one port per transport on the server's address.
func exportNVMeoF(addr string) error {
	sub := filepath.Join(nvmetRoot, "subsystems", nvmeofNQN)
	if err := os.Mkdir(sub, 0o755); err != nil {
		return fmt.Errorf("configfs: create the subsystem: %w", err)
	}
	ns := filepath.Join(sub, "namespaces", "1")
	steps := []func() error{
		func() error { return writeAttr(filepath.Join(sub, "attr_allow_any_host"), "1") },
		func() error { return os.Mkdir(ns, 0o755) },
		func() error { return writeAttr(filepath.Join(ns, "device_path"), "/dev/nullb0") },
		func() error { return writeAttr(filepath.Join(ns, "enable"), "1") },
	}
	for _, p := range []struct{ id, tr string }{{nvmeofPortRDMA, "rdma"}, {nvmeofPortTCP, "tcp"}} {
		port := filepath.Join(nvmetRoot, "ports", p.id)
		steps = append(steps,
			func() error { return os.Mkdir(port, 0o755) },
			func() error { return writeAttr(filepath.Join(port, "addr_trtype"), p.tr) },
			func() error { return writeAttr(filepath.Join(port, "addr_adrfam"), "ipv4") },
			func() error { return writeAttr(filepath.Join(port, "addr_traddr"), addr) },
			func() error { return writeAttr(filepath.Join(port, "addr_trsvcid"), nvmeofSvcID) },
			// linking the subsystem into the port starts listening
			func() error { return os.Symlink(sub, filepath.Join(port, "subsystems", nvmeofNQN)) },
		)
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return err
		}
	}
	return nil
}

// nvmeofCtrl is a connected controller as the kernel shows it in sysfs.
type nvmeofCtrl struct {
	Name      string // nvme0
	Transport string // rdma or tcp: /sys/class/nvme/nvme0/transport
	Address   string
	Disk      string // nvme0n1: the namespace's block device
}

// findNVMeoFCtrls lists the controllers connected to the lab's subsystems.
func findNVMeoFCtrls() []nvmeofCtrl {
	var out []nvmeofCtrl
	dirs, _ := filepath.Glob("/sys/class/nvme/nvme*")
	for _, d := range dirs {
		nqn, err := os.ReadFile(filepath.Join(d, "subsysnqn"))
		if err != nil || !strings.HasPrefix(strings.TrimSpace(string(nqn)), nvmeofNQNPrefix) {
			continue
		}
		c := nvmeofCtrl{Name: filepath.Base(d)}
		if b, err := os.ReadFile(filepath.Join(d, "transport")); err == nil {
			c.Transport = strings.TrimSpace(string(b))
		}
		if b, err := os.ReadFile(filepath.Join(d, "address")); err == nil {
			c.Address = strings.TrimSpace(string(b))
		}
		// with native multipath the disk (nvme0n1) hangs off the
		// subsystem and the controller lists its path (nvme0c0n1)
		if ns, _ := filepath.Glob(filepath.Join(d, "nvme*n*")); len(ns) > 0 {
			n := filepath.Base(ns[0])
			if i := strings.Index(n, "c"); i > 0 && strings.Contains(n[i:], "n") {
				if j := strings.LastIndex(n, "n"); j > i {
					n = n[:i] + n[j:]
				}
			}
			c.Disk = n
		}
		out = append(out, c)
	}
	return out
}

// connectNVMeoF runs nvme connect and returns the new controller.
func connectNVMeoF(ctx context.Context, transport, addr, hostAddr string) (nvmeofCtrl, []string, error) {
	args := []string{"connect", "-t", transport, "-a", addr, "-s", nvmeofSvcID, "-n", nvmeofNQN, "-w", hostAddr, "-i", "1"}
	cctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(cctx, "nvme", args...).CombinedOutput()
	if err != nil {
		return nvmeofCtrl{}, args, fmt.Errorf("nvme %s: %w: %s", strings.Join(args, " "), err, tail(string(out)))
	}
	// The namespace's disk appears when the host has scanned it: its
	// node in /dev and its size in /sys/block. Both, since a connect
	// right after a cancelled run once found /dev/nvme0n1 while
	// /sys/block/nvme0n1 was not there (beside stress-ng: the old
	// controller's disk going while the new one's came).
	for deadline := time.Now().Add(20 * time.Second); ; {
		for _, c := range findNVMeoFCtrls() {
			if c.Transport == transport && c.Disk != "" {
				_, err := os.Stat("/dev/" + c.Disk)
				if size, serr := blockSize(c.Disk); err == nil && serr == nil && size >= readBlock {
					return c, args, nil
				}
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nvmeofCtrl{}, args, fmt.Errorf("nvme connect -t %s succeeded but no controller of the lab's subsystem with a namespace appeared in /sys/class/nvme", transport)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// disconnectNVMeoF deletes the lab's controllers (all of them).
func disconnectNVMeoF() error {
	var errs []error
	for _, c := range findNVMeoFCtrls() {
		if err := writeAttr(filepath.Join("/sys/class/nvme", c.Name, "delete_controller"), "1"); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// unexportNVMeoF removes the lab's ports and subsystems from configfs,
// in the reverse order of their making.
func unexportNVMeoF() error {
	if _, err := os.Stat(nvmetRoot); err != nil {
		return nil // no target module, nothing exported
	}
	var errs []error
	rm := func(f func(string) error, p string) {
		if err := f(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	links, _ := filepath.Glob(filepath.Join(nvmetRoot, "ports", "*", "subsystems", nvmeofNQNPrefix+"*"))
	for _, l := range links {
		rm(os.Remove, l)
	}
	for _, id := range []string{nvmeofPortRDMA, nvmeofPortTCP} {
		rm(syscallRmdir, filepath.Join(nvmetRoot, "ports", id))
	}
	subs, _ := filepath.Glob(filepath.Join(nvmetRoot, "subsystems", nvmeofNQNPrefix+"*"))
	for _, s := range subs {
		nss, _ := filepath.Glob(filepath.Join(s, "namespaces", "*"))
		for _, ns := range nss {
			_ = writeAttr(filepath.Join(ns, "enable"), "0")
			rm(syscallRmdir, ns)
		}
		rm(syscallRmdir, s)
	}
	return errors.Join(errs...)
}

// syscallRmdir removes a configfs directory (os.RemoveAll would try the
// attribute files inside, which configfs refuses).
func syscallRmdir(p string) error { return os.Remove(p) }

// unloadModules removes those of names that are loaded, in passes until
// none is left or a pass removes nothing (a module still in use).
func unloadModules(names []string) error {
	left := names
	for range len(names) {
		var next []string
		for _, n := range left {
			if !moduleLoaded(n) {
				continue
			}
			if err := exec.Command("rmmod", n).Run(); err != nil {
				next = append(next, n)
			}
		}
		if len(next) == 0 || len(next) == len(left) {
			left = next
			break
		}
		left = next
	}
	var still []string
	for _, n := range left {
		if moduleLoaded(n) {
			still = append(still, n)
		}
	}
	if len(still) > 0 {
		return fmt.Errorf("modules still loaded: %s", strings.Join(still, ", "))
	}
	return nil
}

// cleanNVMeoF disconnects, unexports and unloads modules (those of unload
// that were not loaded before the run). It is idempotent: the run calls it
// first too, in case an earlier run's guard was killed.
func cleanNVMeoF(unload []string) error {
	err := disconnectNVMeoF()
	// deleting a controller returns before its queues are gone
	for deadline := time.Now().Add(30 * time.Second); len(findNVMeoFCtrls()) > 0 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	return errors.Join(err, unexportNVMeoF(), unloadModules(unload))
}

const helperNVMeoFGuard = "nvmeof-guard"

// nvmeofLock is held by a guard from arming to the end of its clean-up:
// a run waits on it before it looks, so it never starts while an earlier
// run's guard (say, of a cancelled run) is still tearing down.
const nvmeofLock = "/run/rdmalab-nvmeof.lock"

// lockNVMeoF takes nvmeofLock, waiting at most limit; the returned
// function releases it.
func lockNVMeoF(limit time.Duration) (func(), error) {
	return lockFile(nvmeofLock, "NVMe-oF", limit)
}

// nvmeofLeft counts what the lab's NVMe-oF runs may leave behind: its
// controllers, its subsystems in configfs, and the modules of unload that
// are loaded.
func nvmeofLeft(unload []string) (ctrls, subs, mods int) {
	ctrls = len(findNVMeoFCtrls())
	s, _ := filepath.Glob(filepath.Join(nvmetRoot, "subsystems", nvmeofNQNPrefix+"*"))
	for _, m := range unload {
		if moduleLoaded(m) {
			mods++
		}
	}
	return ctrls, len(s), mods
}

// nvmeofGuardHelper is the NVMe-oF run's clean-up guard (see
// runUnloadGuard).
func nvmeofGuardHelper(ctx context.Context, in io.Reader, out io.Writer) error {
	return runUnloadGuard(in, out, nvmeofUnload, nvmeofLock, "NVMe-oF", cleanNVMeoF)
}
