package vmimage

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rdmalab/rdmalab/internal/fsutil"
	"github.com/rdmalab/rdmalab/machines/vmproto"
)

// The on-demand disk. The initramfs lives in guest RAM for the guest's
// whole life: every megabyte of user space in it is paid by every
// learner's guest, whether or not it ever runs the program. What only a
// few experiments use (lesson 08's UCX, libfabric and Open MPI) goes onto a
// read-only squashfs image instead, attached to every guest as a
// virtio-blk disk (vm/qemu.go; QEMU opens it read-only, so no guest, not
// even its root, can change it) and mounted by the first experiment that
// needs it (package demanddisk, in the guest). The initramfs keeps a
// symbolic link at each of the disk's paths, so programs, libraries,
// dlopen()ed plugins and data files keep the paths their packages compiled
// in; the links dangle until the disk is mounted.
//
// To put more on it: call diskProgram, diskLibrary or diskFile from the
// plan (addUpper is the example); a program's libraries that the
// initramfs already carries stay there, the others go onto the disk.

// DiskFile is the disk image's file name in the image directory.
const DiskFile = "demand.sqfs"

// diskCompression is squashfs's compressor: zstd reads back fast even
// under TCG (the guest pays the decompression on first use only; its page
// cache keeps what it read) and more than halves the file on the host.
// Level 3, not mksquashfs's default 15: measured here on lesson 08's 15
// MB, 6.4 MB in 0.2 s of CPU against 5.5 MB in 2.8 s (20 s of wall time
// on the loaded machine), and the image is rebuilt with every labagent.
const (
	diskCompression = "zstd"
	diskLevel       = "3"
)

// diskProgram puts a program by name into the disk's /usr/bin; pkg is the
// Debian package that brings it (for the MissingError).
func (p *plan) diskProgram(ctx context.Context, name, pkg string) error {
	f, err := lookProgram(name)
	if err != nil {
		return &MissingError{What: name, Packages: []string{pkg}}
	}
	return p.binaryInto(ctx, p.disk, f, "usr/bin/"+name)
}

// diskLibrary puts a shared object that something dlopen()s (a plugin)
// onto the disk at its own path, with the libraries it links.
func (p *plan) diskLibrary(ctx context.Context, host string) error {
	return p.binaryInto(ctx, p.disk, host, guestLibPath(host))
}

// diskFile puts a data file (a header, a help text, a configuration file)
// onto the disk at its own path.
func (p *plan) diskFile(host string) {
	p.disk.file(cleanRel(host), host, 0o644)
	p.inputs = append(p.inputs, host)
}

// linkDisk gives every path on the disk a symbolic link in the initramfs
// into the mount point: one link for a directory that only the disk has
// (Open MPI's component directory), one per file where the initramfs has
// the directory too (/usr/bin, the library directory). It runs after the
// plan is complete, so a directory the initramfs gained later is never
// shadowed by a link.
func (p *plan) linkDisk() error {
	if len(p.disk) == 0 {
		return nil
	}
	baseDirs := map[string]bool{}
	for n, e := range p.files {
		if e.kind == kindDir {
			baseDirs[n] = true
		}
		for d := path.Dir(n); d != "."; d = path.Dir(d) {
			baseDirs[d] = true
		}
	}
	// The initramfs's own symbolic links to directories (bin → usr/bin, lib
	// → usr/lib): a disk path under one would be a second name for a path
	// the disk already has under usr/.
	names := p.disk.names()
	for n, e := range p.files {
		if e.kind == kindSymlink && baseDirs[path.Clean(path.Join(path.Dir(n), e.target))] {
			if slices.ContainsFunc(names, func(d string) bool { return strings.HasPrefix(d, n+"/") }) {
				return fmt.Errorf("on-demand disk: %s is under the initramfs's link %s → %s; use the usr/ path", n, n, e.target)
			}
		}
	}
	for _, n := range names {
		if p.files.has(n) {
			return fmt.Errorf("on-demand disk: %s is in the initramfs too", n)
		}
		link := n
		for d := path.Dir(n); d != "."; d = path.Dir(d) {
			if baseDirs[d] {
				break
			}
			link = d // the topmost directory the initramfs lacks
		}
		if !p.files.has(link) {
			p.files.symlink(link, vmproto.DemandMount+"/"+link)
		}
	}
	p.files.dir(vmproto.DemandMount, 0o755)
	// What the guest reads to find the disk: its virtio serial number.
	p.files.bytes(vmproto.DemandDiskInfo, []byte(vmproto.DemandDiskSerial+"\n"), 0o644)
	return nil
}

// names lists t's paths, sorted.
func (t tree) names() []string {
	out := make([]string, 0, len(t))
	for n := range t {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// writeDisk lays the disk's tree out under stage and packs it with
// mksquashfs into out (through a temporary file and a rename, so a guest
// that has the old disk open keeps reading the old file). Times, owners
// and extended attributes are fixed, so the same inputs give the same
// bytes.
func writeDisk(ctx context.Context, t tree, stage, out string) error {
	mk, err := lookProgram("mksquashfs")
	if err != nil {
		return diskToolMissing()
	}
	root := filepath.Join(stage, "disk")
	for _, n := range t.names() {
		e := t[n]
		dst := filepath.Join(root, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		switch e.kind {
		case kindDir:
			err = os.MkdirAll(dst, e.mode.Perm())
		case kindSymlink:
			err = os.Symlink(e.target, dst)
		case kindFile:
			if e.src == "" {
				err = os.WriteFile(dst, e.data, e.mode.Perm())
			} else if err = fsutil.CopyFile(e.src, dst); err == nil {
				err = os.Chmod(dst, e.mode.Perm())
			}
		default:
			err = fmt.Errorf("on-demand disk: %s: only files, directories and links", n)
		}
		if err != nil {
			return err
		}
	}
	tmp := out + ".tmp"
	os.Remove(tmp)
	var errb bytes.Buffer
	cmd := exec.CommandContext(ctx, mk, root, tmp, "-comp", diskCompression, "-Xcompression-level", diskLevel, "-noappend", "-all-root",
		"-no-xattrs", "-mkfs-time", "0", "-all-time", "0", "-quiet", "-no-progress")
	cmd.Stdout, cmd.Stderr = &errb, &errb
	if err := cmd.Run(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("mksquashfs: %w: %s", err, strings.TrimSpace(errb.String()))
	}
	return os.Rename(tmp, out)
}

// diskToolMissing names the package that packs the on-demand disk.
func diskToolMissing() *MissingError {
	return &MissingError{What: "mksquashfs (packs the guest's on-demand disk)", Packages: []string{"squashfs-tools"}}
}

// checkDiskTool is the preflight of writeDisk.
func checkDiskTool() error {
	if _, err := lookProgram("mksquashfs"); err != nil {
		return diskToolMissing()
	}
	return nil
}
