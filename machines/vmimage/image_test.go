package vmimage

import (
	"bytes"
	"context"
	"fmt"
	"github.com/rdmalab/rdmalab/internal/fsutil"
	"github.com/rdmalab/rdmalab/machines/vmproto"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// readCpio parses a newc archive into name → (mode, data).
func readCpio(t *testing.T, b []byte) map[string]cpioFile {
	t.Helper()
	out := map[string]cpioFile{}
	off := 0
	hex := func(i int) uint64 {
		v, err := strconv.ParseUint(string(b[off+6+8*i:off+6+8*i+8]), 16, 32)
		if err != nil {
			t.Fatalf("bad cpio header at %d: %v", off, err)
		}
		return v
	}
	for {
		if string(b[off:off+6]) != "070701" {
			t.Fatalf("bad magic at %d", off)
		}
		mode, size, rmaj, rmin, nsz := hex(1), hex(6), hex(9), hex(10), hex(11)
		name := string(b[off+110 : off+110+int(nsz)-1])
		off = align4(off + 110 + int(nsz))
		data := b[off : off+int(size)]
		off = align4(off + int(size))
		if name == "TRAILER!!!" {
			if off != len(b) {
				t.Fatalf("trailer at %d, archive is %d bytes", off, len(b))
			}
			return out
		}
		if _, dup := out[name]; dup {
			t.Fatalf("duplicate entry %s", name)
		}
		out[name] = cpioFile{mode: uint32(mode), data: data, rdev: fmt.Sprintf("%d:%d", rmaj, rmin)}
	}
}

type cpioFile struct {
	mode uint32
	data []byte
	rdev string
}

func TestWriteCpio(t *testing.T) {
	src := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(src, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	tr := tree{}
	tr.file("usr/bin/x", src, 0o755)
	tr.bytes("etc/a", []byte("abc"), 0o644)
	tr.symlink("bin", "usr/bin")
	tr.charDev("dev/console", 5, 1, 0o600)
	tr.dir("tmp", 0o777|os.ModeSticky)
	var buf bytes.Buffer
	if err := writeCpio(&buf, tr); err != nil {
		t.Fatal(err)
	}
	got := readCpio(t, buf.Bytes())
	check := func(name string, mode uint32, data string) {
		t.Helper()
		f, ok := got[name]
		if !ok {
			t.Fatalf("missing %s in %v", name, got)
		}
		if f.mode != mode || string(f.data) != data {
			t.Errorf("%s: mode %o data %q, want %o %q", name, f.mode, f.data, mode, data)
		}
	}
	check("usr", sIFDIR|0o755, "") // implicit parent
	check("usr/bin/x", sIFREG|0o755, "hello")
	check("etc/a", sIFREG|0o644, "abc")
	check("bin", sIFLNK|0o777, "usr/bin")
	check("tmp", sIFDIR|0o1777, "")
	check("dev/console", sIFCHR|0o600, "")
	if got["dev/console"].rdev != "5:1" {
		t.Errorf("dev/console rdev %s", got["dev/console"].rdev)
	}
	if buf.Len()%4 != 0 {
		t.Errorf("archive length %d not 4-aligned", buf.Len())
	}
}

func TestVersionLess(t *testing.T) {
	for _, c := range []struct {
		a, b string
		less bool
	}{
		{"6.1.0-9-amd64", "6.1.0-56-amd64", true},
		{"6.1.0-56-amd64", "6.1.0-9-amd64", false},
		{"5.10.0-30-amd64", "6.1.0-1-amd64", true},
		{"6.1.0-56-amd64", "6.1.0-56-amd64", false},
	} {
		if got := versionLess(c.a, c.b); got != c.less {
			t.Errorf("versionLess(%s, %s) = %v", c.a, c.b, got)
		}
	}
}

func TestFindKernelMissing(t *testing.T) {
	_, err := FindKernel(t.TempDir(), t.TempDir())
	me, ok := err.(*MissingError)
	if !ok {
		t.Fatalf("err = %v, want *MissingError", err)
	}
	if !strings.Contains(me.Error(), "apt-get install -y linux-image-amd64") {
		t.Errorf("message lacks the fix: %s", me)
	}
}

// TestBuildImage builds the real image from this machine's packages, checks
// its content, and checks that it is rebuilt only when an input changes.
func TestBuildImage(t *testing.T) {
	requireImageInputs(t)
	dir := t.TempDir()
	agent := filepath.Join(t.TempDir(), AgentName)
	exe, _ := os.Executable()
	if err := fsutil.CopyFile(exe, agent); err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	im, built, err := Build(context.Background(), BuildOptions{Dir: dir, Agent: agent, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("progress:\n%s", progress.String())
	if !built || im.Kernel != "vmlinux" {
		t.Fatalf("built=%v kernel=%s, want a fresh PVH vmlinux", built, im.Kernel)
	}
	if err := hasPVHNote(im.KernelPath()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(im.InitrdPath())
	if err != nil {
		t.Fatal(err)
	}
	files := readCpio(t, b)
	for _, want := range []string{
		"usr/bin/labagent", "usr/bin/ip", "usr/bin/rdma", "usr/bin/ib_write_lat", "usr/bin/qperf",
		"usr/bin/busybox", "usr/bin/sh", "usr/lib64/ld-linux-x86-64.so.2",
		"usr/lib/x86_64-linux-gnu/libibverbs.so.1", "etc/libibverbs.d/rxe.driver", "dev/console",
		"usr/lib/modules/" + im.Release + "/modules.dep",
		"usr/share/terminfo/x/xterm-256color", // the learner's terminal (TERM=xterm-256color): readline wraps long lines
	} {
		if _, ok := files[want]; !ok {
			t.Errorf("image lacks %s", want)
		}
	}
	checkDisk(t, im, files)
	// The guest runs the small agent binary, never the whole labserver.
	if _, ok := files["usr/bin/labserver"]; ok {
		t.Error("the image carries labserver; the guest runs labagent only")
	}
	if init := string(files["init"].data); !strings.Contains(init, "/usr/bin/labagent --serve") || strings.Contains(init, "/usr/bin/labserver") {
		t.Errorf("/init does not start labagent:\n%s", init)
	}
	if got := string(files["usr/bin/sh"].data); got != "dash" {
		t.Errorf("/bin/sh -> %q, want dash", got)
	}
	mods := strings.Fields(string(files[vmproto.ModuleList].data))
	idx := func(name string) int {
		for i, m := range mods {
			if strings.HasSuffix(m, "/"+name+".ko") {
				return i
			}
		}
		return -1
	}
	if c, r := idx("crc32_generic"), idx("rdma_rxe"); c < 0 || r < 0 || c > r {
		t.Errorf("module order %v: want crc32_generic before rdma_rxe", mods)
	}
	late := strings.Fields(string(files[vmproto.LateModuleList].data))
	// Loaded in list order, so each after what it depends on: the
	// connection manager chain ends in rdma_ucm (rping, rdma_cm
	// experiments); the tc modules (wire-capture's drop filter) follow.
	lateIdx := func(name string) int {
		for i, m := range late {
			if strings.HasSuffix(m, "/"+name+".ko") {
				return i
			}
		}
		return -1
	}
	ucm := lateIdx("rdma_ucm")
	for _, dep := range []string{"configfs", "ib_cm", "iw_cm", "rdma_cm"} {
		if d := lateIdx(dep); d < 0 || ucm < 0 || d > ucm {
			t.Errorf("late modules %v: want %s before rdma_ucm", late, dep)
		}
	}
	if ucm < 0 {
		t.Errorf("late modules %v: want rdma_ucm", late)
	}
	for _, m := range append(mods, late...) {
		if _, ok := files[strings.TrimPrefix(m, "/")]; !ok {
			t.Errorf("module %s listed but not in the image", m)
		}
	}
	// On-demand modules (lesson 08's NVMe-oF) are in the image, with
	// modules.dep for modprobe, but in no load list: the boot never pays.
	var depmod string
	for name, f := range files {
		if strings.HasSuffix(name, "/modules.dep") {
			depmod = string(f.data)
		}
		for _, m := range demandModules {
			if strings.HasSuffix(name, "/"+m+".ko") {
				if idx(m) >= 0 || lateIdx(m) >= 0 {
					t.Errorf("on-demand module %s is in a boot load list", m)
				}
			}
		}
	}
	for _, m := range demandModules {
		if !strings.Contains(depmod, "/"+strings.ReplaceAll(m, "_", "-")+".ko:") && !strings.Contains(depmod, "/"+m+".ko:") {
			t.Errorf("on-demand module %s is not in the image's modules.dep", m)
		}
	}

	// Same inputs: nothing to do.
	if _, built, err := Build(context.Background(), BuildOptions{Dir: dir, Agent: agent}); err != nil || built {
		t.Fatalf("second build: built=%v err=%v, want up to date", built, err)
	}
	// A new labagent binary: rebuild.
	f, err := os.OpenFile(agent, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(f, "x")
	f.Close()
	if _, built, err := Build(context.Background(), BuildOptions{Dir: dir, Agent: agent}); err != nil || !built {
		t.Fatalf("after changing labagent: built=%v err=%v, want rebuilt", built, err)
	}
}
