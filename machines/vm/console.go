package vm

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// The guest's serial console is the kernel's and our init's log, and the
// admin's view of a dead guest. It is also a device the guest may write as
// fast as it likes (a learner's `cat … > /dev/ttyS0` ran at about 1 MB/s),
// so QEMU does not write it to a file of its own: it writes to a FIFO
// (chardev pipe) that the host reads into console.log, at most consoleMax
// bytes; past that the file is rotated to console.log.1 (the one older
// file kept) and started again. A guest's console therefore never takes
// more than twice consoleMax of the host's disk (or RAM, where the
// temporary directory is a tmpfs), and what is copied to the image cache
// when the guest stops is the current file.
const consoleMax = 1 << 20

// consoleSink reads the console FIFO into the capped, rotated log.
type consoleSink struct {
	path  string   // console.log
	fifo  *os.File // our end of the FIFO QEMU writes (opened read-write: never blocks, never EOF)
	log   *slog.Logger
	max   int64
	done  chan struct{}
	wrote int64 // bytes in the current file
}

// newConsoleSink makes the FIFOs of QEMU's chardev pipe at base (base.in,
// base.out) and starts reading base.out into path. QEMU's argument is
// "pipe,id=con,path="+base.
func newConsoleSink(base, path string, max int64, log *slog.Logger) (*consoleSink, error) {
	for _, p := range []string{base + ".in", base + ".out"} {
		if err := unix.Mkfifo(p, 0o600); err != nil {
			return nil, fmt.Errorf("console fifo: %w", err)
		}
	}
	fifo, err := os.OpenFile(base+".out", os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("console fifo: %w", err)
	}
	if max <= 0 {
		max = consoleMax
	}
	s := &consoleSink{path: path, fifo: fifo, log: log, max: max, done: make(chan struct{})}
	go s.run()
	return s, nil
}

func (s *consoleSink) run() {
	defer close(s.done)
	defer s.fifo.Close()
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		s.log.Warn("guest console not kept", "err", err)
		_, _ = io.Copy(io.Discard, s.fifo)
		return
	}
	defer func() { f.Close() }()
	buf := make([]byte, 32<<10)
	rotations := 0
	for {
		n, rerr := s.fifo.Read(buf)
		b := buf[:n]
		for len(b) > 0 {
			room := s.max - s.wrote
			if room <= 0 {
				// Full: this file becomes console.log.1, a new one starts.
				f.Close()
				_ = os.Rename(s.path, s.path+".1")
				if f, err = os.OpenFile(s.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644); err != nil {
					s.log.Warn("guest console not kept", "err", err)
					_, _ = io.Copy(io.Discard, s.fifo)
					return
				}
				s.wrote = 0
				if rotations++; rotations == 1 {
					s.log.Warn("the guest writes more than its console log keeps; rotating it (the current and one older file kept)",
						"bytes", s.max, "file", s.path)
				}
				continue
			}
			k := min(int64(len(b)), room)
			_, _ = f.Write(b[:k])
			s.wrote += k
			b = b[k:]
		}
		if rerr != nil {
			return // closed after QEMU exited, or drained (deadline)
		}
	}
}

// stop drains what QEMU wrote before it exited (call after it has) and
// waits for the file to be complete.
func (s *consoleSink) stop() {
	// Our read-write end means no EOF: a short deadline ends the drain.
	if err := s.fifo.SetReadDeadline(time.Now().Add(200 * time.Millisecond)); err != nil && !errors.Is(err, os.ErrClosed) {
		s.fifo.Close()
	}
	<-s.done
}

// consoleFIFO is the chardev pipe's base path in a guest's run directory.
func consoleFIFO(runDir string) string { return filepath.Join(runDir, "console") }
