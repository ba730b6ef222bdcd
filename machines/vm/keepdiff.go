package vm

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// A kept machine saved as what differs from the snapshot (issue 45).
//
// A learner guest maps the snapshot's RAM file copy-on-write
// (sharedram.go), so most of its RAM is still that file's. Its kept state
// is QEMU's whole migration stream (x-ignore-shared off: every page sent)
// filtered on its way to disk: every page of the RAM block ramID that is
// byte-identical to the file at the same offset is left out; every other
// page, the other RAM blocks (ROMs, video RAM) and the devices' sections
// pass through. The restore maps that same file share=off and loads the
// filtered stream (x-ignore-shared off): QEMU's RAM load writes only the
// pages the stream has, so a page left out keeps the file's content.
//
// The stream's format is QEMU 7.2's (migration/savevm.c, migration/ram.c):
//
//	stream   = magic "QEVM" be32(3) [config] section* EOF [vmdesc]
//	config   = 0x07 be32(len) name                       (no subsections)
//	section  = START be32(id) u8(len) idstr be32(instance) be32(version) body footer
//	         | PART be32(id) body footer | END be32(id) body footer
//	         | FULL ...                                  (devices, after RAM's END)
//	footer   = 0x7e be32(id)
//	ram body = record* EOS, each record a be64 address|flags:
//	           MEM_SIZE 0x04: the blocks (u8 len, idstr, be64 length) until their lengths add up
//	           ZERO 0x02: [u8 len idstr unless CONTINUE 0x20] u8 fill
//	           PAGE 0x08: [u8 len idstr unless CONTINUE 0x20] 4096 bytes
//	           EOS  0x10: the section's RAM ends
//
// The devices' sections carry no length, so the filter does not parse
// them: it copies everything from the first section after RAM's END on
// as it is. Anything else it does not know before that (compression,
// XBZRLE, another iterable section, a configuration subsection) makes
// the save fail with an error that says what and where: the stream comes
// from our QEMU, but a guest decides its RAM's content, so every length
// and address is bounded before it is used.

// QEMU 7.2's stream constants (migration/savevm.c, migration/ram.c).
const (
	qemuVMMagic         = 0x5145564d // "QEVM"
	qemuVMVersion       = 3
	qemuVMEOF           = 0x00
	qemuVMSectionStart  = 0x01
	qemuVMSectionPart   = 0x02
	qemuVMSectionEnd    = 0x03
	qemuVMSectionFull   = 0x04
	qemuVMSubsection    = 0x05
	qemuVMConfiguration = 0x07
	qemuVMFooter        = 0x7e

	ramFlagZero     = 0x02
	ramFlagMemSize  = 0x04
	ramFlagPage     = 0x08
	ramFlagEOS      = 0x10
	ramFlagContinue = 0x20

	targetPage = 4096 // x86's TARGET_PAGE_SIZE
	// maxRAMBlocks bounds the RAM block list (a PC guest has a handful).
	maxRAMBlocks = 64
)

// errStream is a migration stream the filter does not understand.
var errStream = errors.New("the migration stream is not one the kept-machine filter understands (QEMU 7.2's format)")

// diffStats is what a filter kept and left out.
type diffStats struct {
	In, Out      int64 // stream bytes read and written
	Pages, Zeros int64 // page and zero-page records read
	Dropped      int64 // records left out: identical to the base
}

// ramDiff filters one migration stream against base, the RAM file the
// guest maps copy-on-write (the content of the RAM block ramID).
type ramDiff struct {
	r    *bufio.Reader
	w    *bufio.Writer
	base []byte

	stats    diffStats
	blocks   map[string]int64 // RAM block → length, from MEM_SIZE
	sent     []uint64         // pages of ramID written out (a later copy of one is never left out)
	ramID    uint32           // the "ram" section's id
	ramOpen  bool             // its START was read
	ramEnded bool             // its END was read
	inBlock  string           // the block the input's last record named
	outBlock string           // the block the output's last record named
	page     [targetPage]byte
}

// filterStream copies the migration stream r to w leaving out the pages
// of RAM block ramID that equal base at the same offset (base nil: all
// pages are copied, the stream is only checked).
func filterStream(r io.Reader, w io.Writer, base []byte) (diffStats, error) {
	d := &ramDiff{r: bufio.NewReaderSize(r, 1<<16), w: bufio.NewWriterSize(w, 1<<16), base: base, blocks: map[string]int64{}}
	d.sent = make([]uint64, (len(base)/targetPage+63)/64)
	err := d.run()
	if err == nil {
		err = d.w.Flush()
	}
	return d.stats, err
}

func (d *ramDiff) fail(format string, args ...any) error {
	return fmt.Errorf("%w: at byte %d: %s", errStream, d.stats.In, fmt.Sprintf(format, args...))
}

// read reads len(p) bytes; copy says whether they go to the output too.
func (d *ramDiff) read(p []byte, copy bool) error {
	n, err := io.ReadFull(d.r, p)
	d.stats.In += int64(n)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return d.fail("the stream ends early")
		}
		return err
	}
	if copy {
		return d.write(p)
	}
	return nil
}

func (d *ramDiff) write(p []byte) error {
	n, err := d.w.Write(p)
	d.stats.Out += int64(n)
	return err
}

func (d *ramDiff) u8(copy bool) (byte, error) {
	var b [1]byte
	err := d.read(b[:], copy)
	return b[0], err
}

func (d *ramDiff) be32(copy bool) (uint32, error) {
	var b [4]byte
	err := d.read(b[:], copy)
	return binary.BigEndian.Uint32(b[:]), err
}

func (d *ramDiff) be64(copy bool) (uint64, error) {
	var b [8]byte
	err := d.read(b[:], copy)
	return binary.BigEndian.Uint64(b[:]), err
}

// str reads a u8-length string (an idstr).
func (d *ramDiff) str(copy bool) (string, error) {
	n, err := d.u8(copy)
	if err != nil {
		return "", err
	}
	b := make([]byte, n)
	err = d.read(b, copy)
	return string(b), err
}

func (d *ramDiff) run() error {
	if m, err := d.be32(true); err != nil || m != qemuVMMagic {
		return errors.Join(err, d.fail("no QEVM magic (%#x)", m))
	}
	if v, err := d.be32(true); err != nil || v != qemuVMVersion {
		return errors.Join(err, d.fail("stream version %d, not %d", v, qemuVMVersion))
	}
	for {
		typ, err := d.u8(true)
		if err != nil {
			return err
		}
		if d.ramEnded && typ != qemuVMSectionPart && typ != qemuVMSectionEnd {
			// The devices (and EOF, the description): passed on as
			// they are, to the stream's end (bounded by the caller).
			n, err := io.Copy(d.w, d.r)
			d.stats.In += n
			d.stats.Out += n
			return err
		}
		switch typ {
		case qemuVMConfiguration:
			n, err := d.be32(true)
			if err != nil {
				return err
			}
			if n > 256 {
				return d.fail("a machine name of %d bytes", n)
			}
			if err := d.read(make([]byte, n), true); err != nil {
				return err
			}
			if next, err := d.r.Peek(1); err == nil && next[0] == qemuVMSubsection {
				return d.fail("the configuration has subsections (a migration capability such as x-ignore-shared is on)")
			}
		case qemuVMSectionStart:
			id, err := d.be32(true)
			if err != nil {
				return err
			}
			name, err := d.str(true)
			if err != nil {
				return err
			}
			if err := d.read(make([]byte, 8), true); err != nil { // instance, version
				return err
			}
			if name != "ram" || d.ramOpen {
				return d.fail("section %q starts before RAM's end", name)
			}
			d.ramID, d.ramOpen = id, true
			if err := d.ramBody(id); err != nil {
				return err
			}
		case qemuVMSectionPart, qemuVMSectionEnd:
			id, err := d.be32(true)
			if err != nil {
				return err
			}
			if !d.ramOpen || id != d.ramID || d.ramEnded {
				return d.fail("section %d continues, not the RAM's open section", id)
			}
			if err := d.ramBody(id); err != nil {
				return err
			}
			d.ramEnded = typ == qemuVMSectionEnd
		default:
			return d.fail("section type %#x before RAM's end", typ)
		}
	}
}

// ramBody filters one RAM section's records up to its EOS, and its footer.
func (d *ramDiff) ramBody(id uint32) error {
	for {
		v, err := d.be64(false)
		if err != nil {
			return err
		}
		addr, flags := int64(v&^(targetPage-1)), v&(targetPage-1)
		switch {
		case flags == ramFlagEOS:
			if err := d.put64(v); err != nil {
				return err
			}
			return d.footer(id)
		case flags == ramFlagMemSize:
			if err := d.put64(v); err != nil {
				return err
			}
			if err := d.memSize(addr); err != nil {
				return err
			}
		case flags&^ramFlagContinue == ramFlagZero || flags&^ramFlagContinue == ramFlagPage:
			if err := d.record(addr, flags); err != nil {
				return err
			}
		default:
			return d.fail("RAM record flags %#x (compression, XBZRLE and multifd are off)", flags)
		}
	}
}

func (d *ramDiff) put64(v uint64) error {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return d.write(b[:])
}

// memSize reads the RAM block list whose lengths add up to total.
func (d *ramDiff) memSize(total int64) error {
	for left := total; left > 0; {
		if len(d.blocks) >= maxRAMBlocks {
			return d.fail("more than %d RAM blocks", maxRAMBlocks)
		}
		name, err := d.str(true)
		if err != nil {
			return err
		}
		n, err := d.be64(true)
		if err != nil {
			return err
		}
		if n == 0 || n > uint64(left) || n%targetPage != 0 {
			return d.fail("RAM block %q of %d bytes in a list of %d", name, n, total)
		}
		if _, dup := d.blocks[name]; dup {
			return d.fail("RAM block %q twice", name)
		}
		d.blocks[name] = int64(n)
		left -= int64(n)
	}
	if d.base != nil && d.blocks[ramID] != int64(len(d.base)) {
		return d.fail("RAM block %q is %d bytes, its file %d", ramID, d.blocks[ramID], len(d.base))
	}
	return nil
}

// record reads one page or zero-page record and writes it unless the
// base holds the same page.
func (d *ramDiff) record(addr int64, flags uint64) error {
	block := d.inBlock
	if flags&ramFlagContinue == 0 {
		var err error
		if block, err = d.str(false); err != nil {
			return err
		}
		d.inBlock = block
	}
	size, ok := d.blocks[block]
	switch {
	case block == "":
		return d.fail("a page continues no block")
	case !ok:
		return d.fail("a page of RAM block %q, not in the block list", block)
	case addr+targetPage > size:
		return d.fail("a page at %#x of RAM block %q of %d bytes", addr, block, size)
	}
	var data []byte
	if flags&ramFlagZero != 0 {
		d.stats.Zeros++
		fill, err := d.u8(false)
		if err != nil {
			return err
		}
		data = []byte{fill}
	} else {
		d.stats.Pages++
		if err := d.read(d.page[:], false); err != nil {
			return err
		}
		data = d.page[:]
	}
	if block == ramID && d.base != nil {
		pg := addr / targetPage
		word, bit := pg/64, uint64(1)<<(pg%64)
		if d.sent[word]&bit == 0 && d.sameAsBase(addr, flags, data) {
			d.stats.Dropped++
			return nil
		}
		d.sent[word] |= bit
	}
	// A page the output names its block for when the last one written
	// was of another: the loader's "continue" is the last block it read.
	head := uint64(addr) | flags&^ramFlagContinue
	if block == d.outBlock {
		head |= ramFlagContinue
	}
	if err := d.put64(head); err != nil {
		return err
	}
	if block != d.outBlock {
		if err := d.write(append([]byte{byte(len(block))}, block...)); err != nil {
			return err
		}
		d.outBlock = block
	}
	return d.write(data)
}

// sameAsBase: the record would leave the page as the base has it.
func (d *ramDiff) sameAsBase(addr int64, flags uint64, data []byte) bool {
	pg := d.base[addr : addr+targetPage]
	if flags&ramFlagZero != 0 {
		if data[0] != 0 {
			return false
		}
		for _, c := range pg {
			if c != 0 {
				return false
			}
		}
		return true
	}
	return bytes.Equal(pg, data)
}

// footer reads a section's footer.
func (d *ramDiff) footer(id uint32) error {
	t, err := d.u8(true)
	if err != nil {
		return err
	}
	if t != qemuVMFooter {
		return d.fail("section %d has no footer (%#x)", id, t)
	}
	if got, err := d.be32(true); err != nil || got != id {
		return errors.Join(err, d.fail("section %d's footer names %d", id, got))
	}
	return nil
}

// mapBase maps f (a RAM file) read-only for the filter; unmap undoes it.
func mapBase(f *os.File) (base []byte, unmap func(), err error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if fi.Size() <= 0 || fi.Size()%targetPage != 0 || fi.Size() > 64<<30 {
		return nil, nil, fmt.Errorf("RAM file of %d bytes", fi.Size())
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("map the RAM file: %w", err)
	}
	return b, func() { _ = unix.Munmap(b) }, nil
}

// linkBase gives f (the RAM file a guest maps, open) a name in dir that
// lasts while a kept machine refers to it: a hard link, so it takes no
// disk while the snapshot still has the file, and the content stays
// while the snapshot is replaced. The name is the file's device and
// inode: while the link exists, no other file has them. It fails when f
// has no name left (its snapshot was replaced) or dir is on another
// file system.
func linkBase(f *os.File, dir string) (string, error) {
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", errors.New("no inode")
	}
	path := filepath.Join(dir, fmt.Sprintf("base-%x-%x.ram", st.Dev, st.Ino))
	if have, err := os.Stat(path); err == nil {
		if os.SameFile(have, fi) {
			return path, nil
		}
		return "", fmt.Errorf("%s is another file", path)
	}
	// The open file itself, whatever its name now (/proc/self/fd).
	if err := unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", f.Fd()), unix.AT_FDCWD, path, unix.AT_SYMLINK_FOLLOW); err != nil {
		return "", fmt.Errorf("link the snapshot's RAM file: %w", err)
	}
	return path, nil
}
