// Package demanddisk mounts the guest's on-demand disk: the read-only
// squashfs with the user space only a few experiments use (lesson 08's
// UCX, libfabric and Open MPI; see vmimage/disk.go). The initramfs has
// symbolic links into its mount point, which dangle until Mount has run.
// It runs in the guest, as root, called by the experiments that need the
// disk before they look for their programs.
package demanddisk

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmalab/rdmalab/machines/vmproto"
)

// modules read the disk: the virtio block driver and the file system
// (vmimage puts both among the on-demand modules, with modules.dep).
var modules = []string{"virtio_blk", "squashfs"}

var (
	mu      sync.Mutex
	mounted bool
)

// Mount mounts the on-demand disk at vmproto.DemandMount unless it is
// mounted already. Where the image has no such disk (a host running the
// experiments itself, an older image) it does nothing: the programs are
// wherever that machine installed them.
func Mount(ctx context.Context) error {
	mu.Lock()
	defer mu.Unlock()
	if mounted {
		return nil
	}
	serial, err := os.ReadFile("/" + vmproto.DemandDiskInfo)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("on-demand disk: %w", err)
	}
	if isMounted(vmproto.DemandMount) {
		mounted = true
		return nil
	}
	args := append([]string{"-a"}, modules...)
	if out, err := exec.CommandContext(ctx, "modprobe", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("on-demand disk: modprobe %s: %w: %s", strings.Join(modules, " "), err, strings.TrimSpace(string(out)))
	}
	dev, err := findDisk(ctx, strings.TrimSpace(string(serial)), 10*time.Second)
	if err != nil {
		return err
	}
	if err := unix.Mount(dev, vmproto.DemandMount, "squashfs", unix.MS_RDONLY|unix.MS_NODEV|unix.MS_NOSUID, ""); err != nil {
		return fmt.Errorf("on-demand disk: mount %s on %s: %w", dev, vmproto.DemandMount, err)
	}
	mounted = true
	return nil
}

// findDisk waits for the virtio disk whose serial number is serial and
// its device node (devtmpfs makes it a moment after the driver found it).
func findDisk(ctx context.Context, serial string, wait time.Duration) (string, error) {
	deadline := time.Now().Add(wait)
	for {
		serials, _ := filepath.Glob("/sys/block/vd*/serial")
		for _, s := range serials {
			b, err := os.ReadFile(s)
			if err != nil || strings.TrimSpace(string(b)) != serial {
				continue
			}
			dev := "/dev/" + filepath.Base(filepath.Dir(s))
			if _, err := os.Stat(dev); err == nil {
				return dev, nil
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("on-demand disk: no virtio disk with serial %q after %v (the guest was started without it: restart labserver after `labserver vm build`)", serial, wait)
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("on-demand disk: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// isMounted says whether something is mounted at dir.
func isMounted(dir string) bool {
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[1] == dir {
			return true
		}
	}
	return false
}
