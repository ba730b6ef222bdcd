package vmimage

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Kernel is a Debian kernel on this machine that can run the lab: its
// compressed image in /boot and its modules, including rdma_rxe.
type Kernel struct {
	Release string // e.g. "6.1.0-56-amd64"
	Image   string // /boot/vmlinuz-<release>
	Modules string // /lib/modules/<release>
}

// FindKernel picks the newest kernel that has both /boot/vmlinuz-R and an
// rdma_rxe module under /lib/modules/R. The host's running kernel does not
// matter: the guest boots whichever Debian kernel package is installed.
func FindKernel(bootDir, modulesDir string) (Kernel, error) {
	ents, err := os.ReadDir(modulesDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return Kernel{}, fmt.Errorf("list kernels: %w", err)
	}
	var found []Kernel
	for _, e := range ents {
		r := e.Name()
		img := filepath.Join(bootDir, "vmlinuz-"+r)
		if _, err := os.Stat(img); err != nil {
			continue
		}
		mods := filepath.Join(modulesDir, r)
		rxe, _ := filepath.Glob(filepath.Join(mods, "kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko*"))
		if len(rxe) == 0 {
			continue
		}
		found = append(found, Kernel{Release: r, Image: img, Modules: mods})
	}
	if len(found) == 0 {
		return Kernel{}, &MissingError{
			What:     "a Debian kernel with the rdma_rxe module (/boot/vmlinuz-* and /lib/modules/*/…/rdma_rxe.ko)",
			Packages: []string{"linux-image-amd64"},
		}
	}
	sort.Slice(found, func(i, j int) bool { return versionLess(found[i].Release, found[j].Release) })
	return found[len(found)-1], nil
}

// versionLess compares kernel releases numerically field by field
// ("6.1.0-9" < "6.1.0-56").
func versionLess(a, b string) bool {
	split := func(s string) []string {
		return strings.FieldsFunc(s, func(r rune) bool { return r == '.' || r == '-' })
	}
	fa, fb := split(a), split(b)
	for i := 0; i < len(fa) && i < len(fb); i++ {
		na, ea := strconv.Atoi(fa[i])
		nb, eb := strconv.Atoi(fb[i])
		switch {
		case ea == nil && eb == nil && na != nb:
			return na < nb
		case (ea != nil || eb != nil) && fa[i] != fb[i]:
			return fa[i] < fb[i]
		}
	}
	return len(fa) < len(fb)
}

var xzMagic = []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}

// extractVmlinux writes the uncompressed ELF kernel found inside a bzImage
// (Debian compresses it with xz). QEMU boots that ELF through its PVH entry
// point, which skips the decompressor: several seconds faster under TCG.
// The payload uses xz's x86 BCJ filter, which no Go xz package served to us
// decodes (github.com/ulikunitz/xz: "unsupported filter count"), so the xz
// program from xz-utils does the decoding.
func extractVmlinux(ctx context.Context, bzImage, out string) error {
	data, err := os.ReadFile(bzImage)
	if err != nil {
		return fmt.Errorf("read kernel: %w", err)
	}
	off := bytes.Index(data, xzMagic)
	if off < 0 {
		return fmt.Errorf("%s: no xz payload (not an xz-compressed bzImage)", bzImage)
	}
	tmp := out + ".tmp"
	if err := unxz(ctx, bytes.NewReader(data[off:]), tmp); err != nil {
		return fmt.Errorf("%s: %w", bzImage, err)
	}
	if err := hasPVHNote(tmp); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, out)
}

// cachedVmlinux extracts vmlinux unless the one at out was extracted from
// the same bzImage (path, size, mtime): a new labagent binary rebuilds the
// initramfs, not the kernel.
func cachedVmlinux(ctx context.Context, bzImage, out string) error {
	fi, err := os.Stat(bzImage)
	if err != nil {
		return fmt.Errorf("kernel: %w", err)
	}
	stamp := fmt.Sprintf("%s %d %d\n", bzImage, fi.Size(), fi.ModTime().UnixNano())
	if b, err := os.ReadFile(out + ".src"); err == nil && string(b) == stamp {
		if _, err := os.Stat(out); err == nil {
			return nil
		}
	}
	if err := extractVmlinux(ctx, bzImage, out); err != nil {
		return err
	}
	return os.WriteFile(out+".src", []byte(stamp), 0o644)
}

// unxz decompresses the first xz stream of r into the file out.
func unxz(ctx context.Context, r io.Reader, out string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "xz", "-dc", "--single-stream")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r, f, &stderr
	err = cmd.Run()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(out)
		if errors.Is(err, exec.ErrNotFound) {
			return &MissingError{What: "xz", Packages: []string{"xz-utils"}}
		}
		return fmt.Errorf("xz -d: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// xenElfNotePhys32Entry is the ELF note type of the PVH entry point
// (XEN_ELFNOTE_PHYS32_ENTRY); QEMU needs it to boot an ELF kernel directly.
const xenElfNotePhys32Entry = 18

// hasPVHNote checks that the ELF kernel at p carries a PVH entry note.
func hasPVHNote(p string) error {
	f, err := elf.Open(p)
	if err != nil {
		return fmt.Errorf("vmlinux is not ELF: %w", err)
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type != elf.PT_NOTE {
			continue
		}
		b, err := io.ReadAll(prog.Open())
		if err != nil {
			return fmt.Errorf("vmlinux notes: %w", err)
		}
		for len(b) >= 12 {
			nsz := binary.LittleEndian.Uint32(b[0:])
			dsz := binary.LittleEndian.Uint32(b[4:])
			typ := binary.LittleEndian.Uint32(b[8:])
			name := b[12:min(len(b), 12+int(nsz))]
			if typ == xenElfNotePhys32Entry && bytes.HasPrefix(name, []byte("Xen")) {
				return nil
			}
			adv := 12 + align4(int(nsz)) + align4(int(dsz))
			if adv > len(b) {
				break
			}
			b = b[adv:]
		}
	}
	return errors.New("vmlinux has no PVH entry note; QEMU cannot boot it directly")
}

func align4(n int) int { return (n + 3) &^ 3 }
