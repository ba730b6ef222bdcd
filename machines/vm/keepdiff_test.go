package vm

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// streamBuilder writes a migration stream in QEMU 7.2's format.
type streamBuilder struct{ bytes.Buffer }

func (s *streamBuilder) u8(b byte)     { s.WriteByte(b) }
func (s *streamBuilder) be32(v uint32) { _ = binary.Write(s, binary.BigEndian, v) }
func (s *streamBuilder) be64(v uint64) { _ = binary.Write(s, binary.BigEndian, v) }
func (s *streamBuilder) str(v string)  { s.u8(byte(len(v))); s.WriteString(v) }

// page writes a page record: block "" continues the last one named.
func (s *streamBuilder) page(block string, addr uint64, data []byte) {
	flags := uint64(ramFlagPage)
	if len(data) == 1 {
		flags = ramFlagZero
	}
	if block == "" {
		s.be64(addr | flags | ramFlagContinue)
	} else {
		s.be64(addr | flags)
		s.str(block)
	}
	s.Write(data)
}

func (s *streamBuilder) header() {
	s.be32(qemuVMMagic)
	s.be32(qemuVMVersion)
	s.u8(qemuVMConfiguration)
	s.be32(6)
	s.WriteString("pc-7.2")
}

func (s *streamBuilder) footer(id uint32) { s.u8(qemuVMFooter); s.be32(id) }

// loadStream applies a stream's RAM records onto mem (block → bytes) as
// QEMU's loader does (ram_load_precopy): only the pages the stream has,
// a zero page filled. It returns what follows RAM's end.
func loadStream(t *testing.T, stream []byte, mem map[string][]byte) []byte {
	t.Helper()
	r := bytes.NewReader(stream)
	var b4 [4]byte
	var b8 [8]byte
	be32 := func() uint32 { _, _ = r.Read(b4[:]); return binary.BigEndian.Uint32(b4[:]) }
	be64 := func() uint64 { _, _ = r.Read(b8[:]); return binary.BigEndian.Uint64(b8[:]) }
	str := func() string { n, _ := r.ReadByte(); b := make([]byte, n); _, _ = r.Read(b); return string(b) }
	be32()
	be32()
	var last string
	for {
		typ, err := r.ReadByte()
		if err != nil {
			t.Fatal("the stream ended in RAM")
		}
		switch typ {
		case qemuVMConfiguration:
			_, _ = r.Read(make([]byte, be32()))
			continue
		case qemuVMSectionStart:
			be32()
			str()
			be32()
			be32()
		case qemuVMSectionPart, qemuVMSectionEnd:
			be32()
		default:
			rest := make([]byte, r.Len())
			_, _ = r.Read(rest)
			return append([]byte{typ}, rest...)
		}
		for {
			v := be64()
			addr, flags := v&^(targetPage-1), v&(targetPage-1)
			if flags == ramFlagEOS {
				break
			}
			if flags == ramFlagMemSize {
				for left := addr; left > 0; {
					str()
					left -= be64()
				}
				continue
			}
			if flags&ramFlagContinue == 0 {
				last = str()
			}
			dst := mem[last][addr : addr+targetPage]
			if flags&ramFlagZero != 0 {
				fill, _ := r.ReadByte()
				for i := range dst {
					dst[i] = fill
				}
			} else {
				_, _ = r.Read(dst)
			}
		}
		r.ReadByte() // footer
		be32()
	}
}

// TestFilterStream: the filtered stream loaded onto the base leaves every
// RAM block as the whole stream loaded onto the base does, with the pages
// equal to the base's left out; a zero page over a base page that is not
// zero stays; a page sent twice keeps its last copy; the devices' bytes
// after RAM pass as they are.
func TestFilterStream(t *testing.T) {
	const pages = 8
	base := make([]byte, pages*targetPage)
	for i := range base {
		base[i] = byte(i/targetPage + 1) // page p is all p+1
	}
	copy(base[5*targetPage:6*targetPage], make([]byte, targetPage)) // page 5 is zero in the base
	pageOf := func(b byte) []byte { return bytes.Repeat([]byte{b}, targetPage) }
	var s streamBuilder
	s.header()
	s.u8(qemuVMSectionStart)
	s.be32(2)
	s.str("ram")
	s.be32(0)
	s.be32(4)
	s.be64(uint64(pages*targetPage+2*targetPage) | ramFlagMemSize)
	s.str("pc.bios")
	s.be64(2 * targetPage)
	s.str("ram")
	s.be64(pages * targetPage)
	s.be64(ramFlagEOS)
	s.footer(2)
	s.u8(qemuVMSectionPart)
	s.be32(2)
	s.page("ram", 0*targetPage, pageOf(1)) // = base: left out (and it named the block)
	s.page("", 1*targetPage, pageOf(9))    // differs: kept, must name "ram" now
	s.page("", 2*targetPage, []byte{0})    // zero over a page of 3s: kept
	s.page("", 5*targetPage, []byte{0})    // zero over a zero page: left out
	s.page("pc.bios", 0, pageOf(7))        // another block: kept
	s.page("ram", 3*targetPage, pageOf(4)) // = base, after another block: left out
	s.page("", 4*targetPage, pageOf(8))    // differs: kept, names "ram" again
	s.page("", 6*targetPage, pageOf(6))    // differs, then sent again as the base's
	s.be64(ramFlagEOS)
	s.footer(2)
	s.u8(qemuVMSectionEnd)
	s.be32(2)
	s.page("ram", 6*targetPage, pageOf(7)) // = base now, but an earlier copy was kept: kept
	s.page("", 7*targetPage, pageOf(8))    // = base: left out
	s.be64(ramFlagEOS)
	s.footer(2)
	devices := []byte{qemuVMSectionFull, 0, 0, 0, 3, 3, 'c', 'p', 'u', 0x7e, 0xff, qemuVMEOF}
	s.Write(devices)
	whole := bytes.Clone(s.Bytes())

	var out bytes.Buffer
	st, err := filterStream(bytes.NewReader(whole), &out, base)
	if err != nil {
		t.Fatal(err)
	}
	if st.In != int64(len(whole)) || st.Out != int64(out.Len()) {
		t.Errorf("stats %+v for %d in, %d out", st, len(whole), out.Len())
	}
	if st.Dropped != 4 || st.Pages != 8 || st.Zeros != 2 {
		t.Errorf("left out %d of %d pages and %d zero pages, want 4 of 8 and 2", st.Dropped, st.Pages, st.Zeros)
	}
	load := func(stream []byte) (map[string][]byte, []byte) {
		mem := map[string][]byte{"ram": bytes.Clone(base), "pc.bios": make([]byte, 2*targetPage)}
		return mem, loadStream(t, stream, mem)
	}
	want, wantRest := load(whole)
	got, gotRest := load(out.Bytes())
	for name := range want {
		if !bytes.Equal(want[name], got[name]) {
			for p := 0; p < len(want[name])/targetPage; p++ {
				if w, g := want[name][p*targetPage], got[name][p*targetPage]; w != g {
					t.Errorf("block %s page %d: %d from the whole stream, %d from the filtered one", name, p, w, g)
				}
			}
		}
	}
	if !bytes.Equal(wantRest, devices) || !bytes.Equal(gotRest, devices) {
		t.Errorf("the devices' part changed: %x → %x", wantRest, gotRest)
	}
	if got["ram"][2*targetPage] != 0 || got["ram"][6*targetPage] != 7 {
		t.Errorf("the zero page or the page sent twice did not land")
	}
	t.Logf("stream %d → %d bytes", len(whole), out.Len())

	// Without a base no page is left out (a record may name its block
	// where the input named it needlessly: the same load).
	out.Reset()
	st, err = filterStream(bytes.NewReader(whole), &out, nil)
	if err != nil || st.Dropped != 0 {
		t.Errorf("without a base: %v, %d pages left out", err, st.Dropped)
	}
	if nobase, _ := load(out.Bytes()); !bytes.Equal(nobase["ram"], want["ram"]) || !bytes.Equal(nobase["pc.bios"], want["pc.bios"]) {
		t.Errorf("without a base the stream loads otherwise")
	}

	// Streams refused, each with what was wrong.
	bad := map[string]func() []byte{
		"truncated": func() []byte { return whole[:len(whole)/2] },
		"no magic":  func() []byte { b := bytes.Clone(whole); b[0] = 'X'; return b },
		"page beyond its block": func() []byte {
			var b streamBuilder
			b.header()
			ramStart(&b, pages)
			b.page("ram", pages*targetPage, pageOf(1))
			return b.Bytes()
		},
		"unknown block": func() []byte {
			var b streamBuilder
			b.header()
			ramStart(&b, pages)
			b.page("vga.vram", 0, pageOf(1))
			return b.Bytes()
		},
		"continue with no block": func() []byte {
			var b streamBuilder
			b.header()
			ramStart(&b, pages)
			b.page("", 0, pageOf(1))
			return b.Bytes()
		},
		"compressed page": func() []byte {
			var b streamBuilder
			b.header()
			ramStart(&b, pages)
			b.be64(0x100)
			return b.Bytes()
		},
		"block list over its total": func() []byte {
			var b streamBuilder
			b.header()
			b.u8(qemuVMSectionStart)
			b.be32(2)
			b.str("ram")
			b.be32(0)
			b.be32(4)
			b.be64(targetPage | ramFlagMemSize)
			b.str("ram")
			b.be64(1 << 40)
			return b.Bytes()
		},
		"endless block list": func() []byte {
			var b streamBuilder
			b.header()
			b.u8(qemuVMSectionStart)
			b.be32(2)
			b.str("ram")
			b.be32(0)
			b.be32(4)
			b.be64(1<<40 | ramFlagMemSize)
			for i := range 100 {
				b.str(fmt.Sprint("b", i))
				b.be64(targetPage)
			}
			return b.Bytes()
		},
		"RAM block not the file's size": func() []byte {
			var b streamBuilder
			b.header()
			ramStart(&b, pages+1)
			return b.Bytes()
		},
		"device section before RAM's end": func() []byte {
			var b streamBuilder
			b.header()
			b.Write(devices)
			return b.Bytes()
		},
		"missing footer": func() []byte {
			var b streamBuilder
			b.header()
			ramStart(&b, pages)
			b.be64(ramFlagEOS)
			b.u8(qemuVMSectionEnd)
			return b.Bytes()
		},
		"configuration subsection": func() []byte {
			var b streamBuilder
			b.header()
			b.u8(qemuVMSubsection)
			return b.Bytes()
		},
	}
	for name, mk := range bad {
		_, err := filterStream(bytes.NewReader(mk()), &bytes.Buffer{}, base)
		if !errors.Is(err, errStream) || !strings.Contains(err.Error(), "at byte") {
			t.Errorf("%s: %v, want errStream at a byte", name, err)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

// ramStart opens the RAM section with one block, "ram", of n pages.
func ramStart(b *streamBuilder, n int) {
	b.u8(qemuVMSectionStart)
	b.be32(2)
	b.str("ram")
	b.be32(0)
	b.be32(4)
	b.be64(uint64(n*targetPage) | ramFlagMemSize)
	b.str("ram")
	b.be64(uint64(n * targetPage))
	b.be64(ramFlagEOS)
	b.footer(2)
	b.u8(qemuVMSectionPart)
	b.be32(2)
}

// TestSaveStateWholeWhenNotUnderstood: a stream the filter refuses (here
// because the base file it is given is not the guest's RAM) does not
// lose the machine: SaveState saves it whole, and it restores with what
// the guest had written.
func TestSaveStateWholeWhenNotUnderstood(t *testing.T) {
	if testing.Short() {
		t.Skip("boots QEMU guests")
	}
	cfg := testConfig(t)
	cfg.Accel = AccelTCG
	ctx := context.Background()
	be := New(cfg)
	be.Start()
	g, err := be.WaitReady(ctx)
	if err != nil {
		be.Close()
		t.Fatal(err)
	}
	if out, err := guestSh(ctx, g, "echo kept-$((6*7)) > /run/kept.txt && cat /run/kept.txt"); err != nil || strings.TrimSpace(out) != "kept-42" {
		be.Close()
		t.Fatalf("writing in the guest: %q, %v", out, err)
	}
	wrong, err := os.Create(filepath.Join(t.TempDir(), "wrong.ram"))
	if err != nil {
		t.Fatal(err)
	}
	_ = wrong.Truncate(targetPage)
	g.ramMu.Lock()
	if g.ramFile == nil {
		g.ramMu.Unlock()
		be.Close()
		t.Fatal("the guest does not map the snapshot's RAM file")
	}
	g.ramFile.Close()
	g.ramFile = wrong
	g.ramMu.Unlock()
	path := filepath.Join(t.TempDir(), "state.zst")
	st, err := be.SaveState(ctx, path, 64<<20, nil, t.TempDir())
	be.Close()
	if err != nil {
		t.Fatalf("the save failed instead of saving whole: %v", err)
	}
	if st.Base != "" || st.Diff != st.Raw || st.Dropped != 0 {
		t.Fatalf("not saved whole: %+v", st)
	}
	t.Logf("saved whole: %d bytes of a %d-byte stream", st.Bytes, st.Raw)

	back := New(cfg)
	var restoreErr error
	restored := false
	back.RestoreFirst(func(string) *SavedState { return &st }, func(_ *SavedState, _ time.Duration, err error) { restored, restoreErr = true, err })
	back.Start()
	defer back.Close()
	g, err = back.WaitReady(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !restored || restoreErr != nil {
		t.Fatalf("restored %v: %v", restored, restoreErr)
	}
	if out, err := guestSh(ctx, g, "cat /run/kept.txt"); err != nil || strings.TrimSpace(out) != "kept-42" {
		t.Fatalf("the restored guest: %q, %v", out, err)
	}
}
