package vm

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The console log keeps at most consoleMax bytes in each of two files,
// however much the guest writes (issue 28 fall 2: 20 MB in 20 s into an
// uncapped file), and the newest bytes are in console.log.
func TestConsoleCapped(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "console.log")
	s, err := newConsoleSink(consoleFIFO(dir), path, 0, newTestLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	// QEMU's end: the FIFO opened read-write, as chardev pipe does.
	w, err := os.OpenFile(consoleFIFO(dir)+".out", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	line := bytes.Repeat([]byte("flood "), 1000)
	for range 5 * consoleMax / len(line) {
		if _, err := w.Write(line); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Write([]byte("\nthe last words\n")); err != nil {
		t.Fatal(err)
	}
	w.Close()
	s.stop()
	cur, _ := os.ReadFile(path)
	old, _ := os.ReadFile(path + ".1")
	t.Logf("5 MiB written: console.log %d bytes, console.log.1 %d bytes", len(cur), len(old))
	if len(cur) > consoleMax || len(old) > consoleMax || len(old) == 0 {
		t.Errorf("console.log %d bytes, console.log.1 %d bytes; want each at most %d, the old one kept", len(cur), len(old), consoleMax)
	}
	if !bytes.HasSuffix(cur, []byte("the last words\n")) {
		t.Errorf("console.log does not end with the newest output: …%q", cur[max(0, len(cur)-40):])
	}
}
