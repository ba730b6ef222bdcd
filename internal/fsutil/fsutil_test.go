package fsutil

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestWriteFileAtomic(t *testing.T) {
	name := filepath.Join(t.TempDir(), "m.json")
	var wg sync.WaitGroup
	for i := range 8 { // concurrent writers: one whole file wins, no leftovers
		wg.Go(func() {
			if err := WriteFileAtomic(name, []byte{byte('a' + i), byte('a' + i)}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	b, err := os.ReadFile(name)
	if err != nil || len(b) != 2 || b[0] != b[1] {
		t.Fatalf("read %q, %v: want two equal bytes", b, err)
	}
	ents, _ := os.ReadDir(filepath.Dir(name))
	if len(ents) != 1 {
		t.Errorf("%d files left, want 1", len(ents))
	}
	if err := WriteFileAtomic(filepath.Join(name, "x"), nil); err == nil {
		t.Error("writing under a file succeeded")
	}
}

func TestCopyFile(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := os.WriteFile(src, []byte("kernel"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := CopyFile(src, dst); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(dst); string(b) != "kernel" {
		t.Errorf("copied %q", b)
	}
	if err := CopyFile(filepath.Join(dir, "none"), dst); err == nil {
		t.Error("copying a missing file succeeded")
	}
}
