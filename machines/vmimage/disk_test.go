package vmimage

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/machines/vmproto"
)

// TestLinkDisk: every path on the on-demand disk is reachable from the
// initramfs at its own path through a link into the mount point — one
// link for a directory only the disk has, one per file in a directory the
// initramfs has too — and nothing the initramfs carries is shadowed.
func TestLinkDisk(t *testing.T) {
	p := &plan{files: tree{}, disk: tree{}}
	p.files.file("usr/bin/ip", "/x", 0o755)
	p.files.file("usr/lib/x86_64-linux-gnu/libc.so.6", "/x", 0o755)
	p.files.symlink("lib", "usr/lib")
	p.disk.file("usr/bin/ucx_info", "/x", 0o755)
	p.disk.symlink("usr/bin/mpirun", "orterun")
	p.disk.file("usr/lib/x86_64-linux-gnu/libucp.so.0", "/x", 0o755)
	p.disk.file("usr/lib/x86_64-linux-gnu/ucx/libuct_ib.so.0", "/x", 0o755)
	p.disk.file("usr/lib/x86_64-linux-gnu/ucx/libuct_cma.so.0", "/x", 0o755)
	p.disk.file("usr/share/openmpi/help-mpirun.txt", "/x", 0o644)
	p.disk.file("etc/openmpi/openmpi-mca-params.conf", "/x", 0o644)
	if err := p.linkDisk(); err != nil {
		t.Fatal(err)
	}
	m := vmproto.DemandMount + "/"
	want := map[string]string{
		"usr/bin/ucx_info":                     m + "usr/bin/ucx_info",
		"usr/bin/mpirun":                       m + "usr/bin/mpirun",
		"usr/lib/x86_64-linux-gnu/libucp.so.0": m + "usr/lib/x86_64-linux-gnu/libucp.so.0",
		"usr/lib/x86_64-linux-gnu/ucx":         m + "usr/lib/x86_64-linux-gnu/ucx",
		"usr/share":                            m + "usr/share",
		"etc":                                  m + "etc",
	}
	for n, target := range want {
		e, ok := p.files[n]
		if !ok || e.kind != kindSymlink || e.target != target {
			t.Errorf("%s: %+v, want a link to %s", n, e, target)
		}
	}
	for _, n := range []string{"usr/lib/x86_64-linux-gnu/ucx/libuct_ib.so.0", "usr/share/openmpi", "etc/openmpi"} {
		if p.files.has(n) {
			t.Errorf("%s has its own link although a parent directory is linked", n)
		}
	}
	if e := p.files["usr/bin/ip"]; e.kind != kindFile {
		t.Errorf("usr/bin/ip shadowed: %+v", e)
	}
	if e := p.files[cleanRel(vmproto.DemandMount)]; e == nil || e.kind != kindDir {
		t.Errorf("no mount point %s in the initramfs", vmproto.DemandMount)
	}
	if e := p.files[vmproto.DemandDiskInfo]; e == nil || strings.TrimSpace(string(e.data)) != vmproto.DemandDiskSerial {
		t.Errorf("%s: %+v, want the disk's serial", vmproto.DemandDiskInfo, e)
	}

	// A path in both is a mistake, and so is a disk path under one of
	// the initramfs's directory links (a second name for usr/lib).
	p.disk.file("usr/bin/ip", "/x", 0o755)
	if err := p.linkDisk(); err == nil {
		t.Error("a path both in the initramfs and on the disk passed")
	}
	q := &plan{files: tree{}, disk: tree{}}
	q.files.file("usr/lib/a", "/x", 0o755)
	q.files.symlink("lib", "usr/lib")
	q.disk.file("lib/b", "/x", 0o755)
	if err := q.linkDisk(); err == nil {
		t.Error("a disk path under the initramfs's lib → usr/lib link passed")
	}
}

// diskList lists the paths in a squashfs image with unsquashfs
// (squashfs-tools, which builds it).
func diskList(t *testing.T, img string) map[string]bool {
	t.Helper()
	out, err := exec.Command("unsquashfs", "-l", "-d", "", img).Output()
	if err != nil {
		t.Fatalf("unsquashfs -l %s: %v", img, err)
	}
	got := map[string]bool{}
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimPrefix(strings.TrimSpace(l), "/"); l != "" {
			got[l] = true
		}
	}
	return got
}

// checkDisk: lesson 08's programs are on the disk and only linked from
// the initramfs; every link into the mount point names a path the disk has.
func checkDisk(t *testing.T, im *Image, files map[string]cpioFile) {
	t.Helper()
	if im.Disk != DiskFile || im.DiskSize == 0 {
		t.Fatalf("image disk %q (%d bytes), want %s", im.Disk, im.DiskSize, DiskFile)
	}
	fi, err := os.Stat(im.DiskPath())
	if err != nil || fi.Size() != im.DiskSize || fi.Size()%512 != 0 {
		t.Fatalf("disk file: %v, size %d (manifest %d; a block device wants whole sectors)", err, fi.Size(), im.DiskSize)
	}
	on := diskList(t, im.DiskPath())
	for _, want := range []string{"usr/bin/ucx_perftest", "usr/bin/fi_pingpong", "usr/bin/orterun", "usr/bin/mpirun",
		"usr/lib/x86_64-linux-gnu/libmpi.so.40", "usr/lib/x86_64-linux-gnu/ucx/libuct_ib.so.0",
		"usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h", "etc/openmpi/openmpi-mca-params.conf"} {
		if !on[want] {
			t.Errorf("the on-demand disk lacks %s", want)
		}
	}
	// On-demand modules: their files on the disk, the disk's own readers
	// and modules.dep in the initramfs.
	mods := "usr/lib/modules/" + im.Release + "/"
	for _, want := range []string{"kernel/fs/nfsd/nfsd.ko", "kernel/drivers/nvme/target/nvmet-rdma.ko", "kernel/net/sunrpc/xprtrdma/rpcrdma.ko"} {
		if !on[mods+want] {
			t.Errorf("the on-demand disk lacks %s", mods+want)
		}
	}
	for _, want := range []string{"kernel/drivers/block/virtio_blk.ko", "kernel/fs/squashfs/squashfs.ko", "modules.dep"} {
		if f, ok := files[mods+want]; !ok || f.mode&0o170000 != sIFREG {
			t.Errorf("the initramfs lacks %s (the guest needs it to read the disk)", mods+want)
		}
	}
	links := 0
	for name, f := range files {
		if f.mode&0o170000 == sIFREG && (strings.HasSuffix(name, "/ucx_perftest") || strings.HasSuffix(name, "/libmpi.so.40")) {
			t.Errorf("%s is in the initramfs (guest RAM); it belongs on the on-demand disk", name)
		}
		target := string(f.data)
		if f.mode&0o170000 != sIFLNK || !strings.HasPrefix(target, vmproto.DemandMount+"/") {
			continue
		}
		links++
		if rel := strings.TrimPrefix(target, vmproto.DemandMount+"/"); rel != name || !on[rel] {
			t.Errorf("link %s → %s: the disk has no such path, or it is not the link's own path", name, target)
		}
	}
	if links == 0 {
		t.Error("no links into the on-demand disk in the initramfs")
	}
	if _, ok := files[vmproto.DemandDiskInfo]; !ok {
		t.Errorf("initramfs lacks %s", vmproto.DemandDiskInfo)
	}
	t.Logf("initramfs %d bytes; on-demand disk %d bytes, %d paths, %d links", im.Size, im.DiskSize, len(on), links)
}
