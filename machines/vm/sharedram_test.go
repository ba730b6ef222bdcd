package vm

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/machines/vmproto"
)

// TestSharedRAMIsolation: two guests restored from one snapshot map its
// RAM file, and what one writes stays its own. Guest A writes a fresh
// pattern into its memory (a file in its RAM-backed /run); the host then
// reads both guests' RAM through /proc/PID/mem: the pattern is in A's
// (the scan sees a write), nowhere in B's, nowhere in the snapshot's RAM
// file, whose hash has not changed; B still answers.
func TestSharedRAMIsolation(t *testing.T) {
	if testing.Short() {
		t.Skip("boots QEMU guests")
	}
	cfg := testConfig(t)
	cfg.Dir = ownCache(t)
	cfg.Accel = AccelTCG
	cfg.CPUs = 1 // a learner's guest
	ctx := context.Background()
	a, err := Restore(ctx, cfg) // the first also boots and saves the snapshot
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	b, err := Restore(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	ram := a.ram
	if ram == nil || ram.file == "" || ram.shared || b.ram == nil || b.ram.file != ram.file {
		t.Fatalf("the guests do not map the snapshot's RAM file copy-on-write: A %+v, B %+v", a.ram, b.ram)
	}
	before := fileHash(t, ram.file)

	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	// The pattern is built in the guest, so the script that carries it
	// (its text in the agent's memory) does not contain it whole.
	half := "rdmalab-isolation-" + hex.EncodeToString(nonce[:4])
	rest := hex.EncodeToString(nonce[4:])
	pattern := []byte(half + rest)
	script := fmt.Sprintf("mkdir -p /run/iso && yes %s''%s | head -c 4194304 > /run/iso/pattern && wc -c < /run/iso/pattern", half, rest)
	out, err := guestSh(ctx, a, script)
	if err != nil || strings.TrimSpace(out) != "4194304" {
		t.Fatalf("writing the pattern in guest A: %q, %v", out, err)
	}

	if n := scanGuestRAM(t, a.PID(), ram.file, pattern); n == 0 {
		t.Fatalf("the pattern is not in guest A's RAM: the scan would not see a leak either")
	} else {
		t.Logf("guest A's RAM holds the pattern %d times", n)
	}
	if n := scanGuestRAM(t, b.PID(), ram.file, pattern); n != 0 {
		t.Errorf("guest B's RAM holds guest A's pattern %d times", n)
	}
	if n := scanFile(t, ram.file, pattern); n != 0 {
		t.Errorf("the snapshot's RAM file holds guest A's pattern %d times", n)
	}
	if after := fileHash(t, ram.file); after != before {
		t.Errorf("the snapshot's RAM file changed: %s → %s", before, after)
	}
	if out, err := guestSh(ctx, b, "test -e /run/iso/pattern && echo there || echo absent"); err != nil || strings.TrimSpace(out) != "absent" {
		t.Errorf("guest B sees A's file: %q, %v", out, err)
	}
	if err := b.Ping(ctx); err != nil {
		t.Errorf("guest B after A's writes: %v", err)
	}
}

// guestSh runs script with /bin/sh in g (a task check's channel) and
// returns what it printed (at most vmproto.VerifyOutputMax bytes).
func guestSh(ctx context.Context, g *Guest, script string) (string, error) {
	var mu sync.Mutex
	var out []byte
	ch, err := g.Open(vmproto.HostMsg{Op: vmproto.OpVerify, Data: []byte(script), Lang: "en"},
		ChannelOpts{Data: func(b []byte) { mu.Lock(); out = append(out, b...); mu.Unlock() }, DataMax: vmproto.VerifyOutputMax})
	if err != nil {
		return "", err
	}
	select {
	case err = <-ch.End():
	case <-ctx.Done():
		err = ctx.Err()
	}
	mu.Lock()
	defer mu.Unlock()
	return string(out), err
}

func fileHash(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// countIn counts pattern in r, read in chunks that overlap by the
// pattern's length so that none is missed at a boundary.
func countIn(t *testing.T, r io.ReaderAt, off, size int64, pattern []byte) int {
	t.Helper()
	const chunk = 4 << 20
	buf := make([]byte, chunk+len(pattern))
	n := 0
	for pos := int64(0); pos < size; pos += chunk {
		want := min(int64(len(buf)), size-pos)
		got, err := r.ReadAt(buf[:want], off+pos)
		if err != nil && err != io.EOF {
			t.Fatalf("read at %#x: %v", off+pos, err)
		}
		b := buf[:got]
		// Count only matches that start inside this chunk.
		for i := 0; ; {
			j := bytes.Index(b[i:], pattern)
			if j < 0 || int64(i+j) >= chunk {
				break
			}
			n++
			i += j + 1
		}
	}
	return n
}

func scanFile(t *testing.T, path string, pattern []byte) int {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	return countIn(t, f, 0, fi.Size(), pattern)
}

// scanGuestRAM counts pattern in process pid's mapping of file (the
// guest's RAM), read through /proc/PID/mem.
func scanGuestRAM(t *testing.T, pid int, file string, pattern []byte) int {
	t.Helper()
	maps, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer maps.Close()
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	n, found := 0, false
	sc := bufio.NewScanner(maps)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || f[5] != file {
			continue
		}
		lo, hi, _ := strings.Cut(f[0], "-")
		from, err1 := strconv.ParseUint(lo, 16, 64)
		to, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("maps line %q", sc.Text())
		}
		found = true
		n += countIn(t, mem, int64(from), int64(to-from), pattern)
	}
	if !found {
		t.Fatalf("process %d does not map %s", pid, file)
	}
	return n
}

// Which RAM each kind of guest gets: the boot that becomes the snapshot
// writes a file, a restore maps the snapshot's copy-on-write, a kept
// machine (its state carries all its RAM) and a guest that will not be
// snapshotted get anonymous RAM under the same block name, and
// PrivateRAM or a root shell keep QEMU's plain -m.
func TestRAMFor(t *testing.T) {
	boot := func() string { return "/c/snapshot.ram.1.tmp" }
	shared := &Snapshot{RAMFile: "/c/snapshot.k.ram"}
	for _, c := range []struct {
		what  string
		cfg   Config
		snap  *Snapshot
		shell bool
		want  string
	}{
		{"boot", Config{}, nil, false, "-object memory-backend-file,id=ram,size=256M,share=on,mem-path=/c/snapshot.ram.1.tmp -machine memory-backend=ram"},
		{"restore", Config{}, shared, false, "-object memory-backend-file,id=ram,size=256M,share=off,mem-path=/c/snapshot.k.ram -machine memory-backend=ram"},
		{"kept", Config{}, &Snapshot{kept: true}, false, "-object memory-backend-ram,id=ram,size=256M -machine memory-backend=ram"},
		{"no snapshot", Config{NoSnapshot: true}, nil, false, "-object memory-backend-ram,id=ram,size=256M -machine memory-backend=ram"},
		{"private", Config{PrivateRAM: true}, nil, false, ""},
		{"private restore", Config{PrivateRAM: true}, &Snapshot{}, false, ""},
		{"shell", Config{}, nil, true, ""},
	} {
		got := strings.Join(ramFor(c.cfg, c.snap, c.shell, boot).args(256), " ")
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.what, got, c.want)
		}
	}
}

// A new snapshot removes its slot's older shared-RAM files and a dead
// boot's RAM file, and leaves the files it keeps, a boot's RAM file that
// may still be booting, and other slots' files alone.
func TestRemoveStaleSnapshots(t *testing.T) {
	dir := t.TempDir()
	files := map[string]bool{ // name → still there afterwards
		"snapshot.old.ram": false, "snapshot.old.state": false,
		"snapshot.new.ram": true, "snapshot.new.state": true,
		"snapshot.ram.dead.tmp": false, "snapshot.ram.booting.tmp": true,
		"snapshot-1cpu.old.ram": true, "snapshot.json": true,
	}
	for name := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "snapshot.ram.dead.tmp"), old, old); err != nil {
		t.Fatal(err)
	}
	removeStaleSnapshots(dir, "snapshot", "snapshot.new.state", "snapshot.new.ram")
	for name, stays := range files {
		_, err := os.Stat(filepath.Join(dir, name))
		if (err == nil) != stays {
			t.Errorf("%s: there %v, want %v", name, err == nil, stays)
		}
	}
}
