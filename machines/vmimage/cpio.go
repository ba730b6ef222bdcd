package vmimage

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
)

// The initramfs is an uncompressed "newc" cpio archive. We write it ourselves
// because the format is tiny, it lets us add device nodes and symlinks without
// root or a staging tree, and keeping it uncompressed makes the guest boot
// faster under TCG (the kernel's decompressor is slow when emulated).

// entryKind is the type of one archive entry.
type entryKind int

const (
	kindDir entryKind = iota
	kindFile
	kindSymlink
	kindCharDev
)

// entry is one file of the guest's root file system.
type entry struct {
	kind   entryKind
	mode   fs.FileMode // permission bits
	src    string      // kindFile: copy from this host path ...
	data   []byte      // ... or use these bytes when src is empty
	target string      // kindSymlink
	major  uint32      // kindCharDev
	minor  uint32
}

// tree is the guest's root file system, keyed by clean relative path
// ("usr/bin/ip"). Parents are created implicitly when the archive is written.
type tree map[string]*entry

func cleanRel(p string) string {
	return strings.TrimPrefix(path.Clean("/"+p), "/")
}

func (t tree) dir(p string, mode fs.FileMode) {
	t[cleanRel(p)] = &entry{kind: kindDir, mode: mode}
}

func (t tree) file(p, src string, mode fs.FileMode) {
	t[cleanRel(p)] = &entry{kind: kindFile, src: src, mode: mode}
}

func (t tree) bytes(p string, data []byte, mode fs.FileMode) {
	t[cleanRel(p)] = &entry{kind: kindFile, data: data, mode: mode}
}

func (t tree) symlink(p, target string) {
	t[cleanRel(p)] = &entry{kind: kindSymlink, target: target, mode: 0o777}
}

func (t tree) charDev(p string, major, minor uint32, mode fs.FileMode) {
	t[cleanRel(p)] = &entry{kind: kindCharDev, major: major, minor: minor, mode: mode}
}

// has reports whether p is already in the tree.
func (t tree) has(p string) bool {
	_, ok := t[cleanRel(p)]
	return ok
}

// size is the sum of the regular files' sizes (for progress output).
func (t tree) size() int64 {
	var n int64
	for _, e := range t {
		if e.kind != kindFile {
			continue
		}
		if e.src == "" {
			n += int64(len(e.data))
		} else if fi, err := os.Stat(e.src); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// writeCpio writes t as a newc archive, parents before children, ending with
// the TRAILER!!! record.
func writeCpio(w io.Writer, t tree) error {
	all := map[string]*entry{}
	for p, e := range t {
		all[p] = e
		for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
			if _, ok := all[d]; !ok {
				if _, ok := t[d]; !ok {
					all[d] = &entry{kind: kindDir, mode: 0o755}
				}
			}
		}
	}
	names := make([]string, 0, len(all))
	for p := range all {
		names = append(names, p)
	}
	sort.Strings(names) // a parent is a prefix of its children, so it sorts first
	cw := &cpioWriter{w: bufio.NewWriterSize(w, 1<<20)}
	for _, p := range names {
		if err := cw.add(p, all[p]); err != nil {
			return fmt.Errorf("cpio %s: %w", p, err)
		}
	}
	if err := cw.header("TRAILER!!!", 0, 0, 0, 0, 1); err != nil {
		return err
	}
	cw.pad()
	return cw.w.Flush()
}

// Mode type bits of a cpio header (as in <sys/stat.h>).
const (
	sIFDIR = 0o040000
	sIFREG = 0o100000
	sIFLNK = 0o120000
	sIFCHR = 0o020000
)

type cpioWriter struct {
	w   *bufio.Writer
	n   int64 // bytes written so far, for 4-byte alignment
	ino uint32
	err error
}

func (c *cpioWriter) write(b []byte) {
	if c.err != nil {
		return
	}
	k, err := c.w.Write(b)
	c.n += int64(k)
	c.err = err
}

func (c *cpioWriter) pad() {
	if r := c.n % 4; r != 0 {
		c.write(make([]byte, 4-r))
	}
}

func (c *cpioWriter) header(name string, mode uint32, size int64, rmaj, rmin uint32, nlink uint32) error {
	if size > 0xffffffff {
		return fmt.Errorf("file too large for newc: %d bytes", size)
	}
	c.ino++
	h := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		c.ino, mode, 0, 0, nlink, 0, size, 0, 0, rmaj, rmin, len(name)+1, 0)
	c.write([]byte(h))
	c.write([]byte(name))
	c.write([]byte{0})
	c.pad()
	return c.err
}

func (c *cpioWriter) add(name string, e *entry) error {
	perm := uint32(e.mode.Perm())
	if e.mode&fs.ModeSticky != 0 {
		perm |= 0o1000
	}
	switch e.kind {
	case kindDir:
		return c.header(name, sIFDIR|perm, 0, 0, 0, 2)
	case kindSymlink:
		if err := c.header(name, sIFLNK|0o777, int64(len(e.target)), 0, 0, 1); err != nil {
			return err
		}
		c.write([]byte(e.target))
		c.pad()
		return c.err
	case kindCharDev:
		return c.header(name, sIFCHR|perm, 0, e.major, e.minor, 1)
	case kindFile:
		if e.src == "" {
			if err := c.header(name, sIFREG|perm, int64(len(e.data)), 0, 0, 1); err != nil {
				return err
			}
			c.write(e.data)
			c.pad()
			return c.err
		}
		f, err := os.Open(e.src)
		if err != nil {
			return err
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		if err := c.header(name, sIFREG|perm, fi.Size(), 0, 0, 1); err != nil {
			return err
		}
		k, err := io.Copy(c.w, f)
		c.n += k
		if err != nil {
			return err
		}
		if k != fi.Size() {
			return fmt.Errorf("%s changed while copying (%d of %d bytes)", e.src, k, fi.Size())
		}
		c.pad()
		return c.err
	}
	return fmt.Errorf("unknown entry kind %d", e.kind)
}
