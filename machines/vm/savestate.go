package vm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/rdmalab/rdmalab/internal/ctxtime"
	"github.com/rdmalab/rdmalab/machines/vmimage"
	"github.com/rdmalab/rdmalab/machines/vmproto"
	"github.com/rdmalab/rdmalab/sandbox"
)

// A guest's whole state saved for later (a learner's kept machine:
// package terminal decides whose, where and for how long): QEMU's
// migration (RAM and devices: the guest has no disk, its files live in
// RAM) streamed to a unix socket this process listens on, through zstd
// into one file, and restored by streaming it back into a new QEMU's
// `-incoming unix:`. The guest is the learner's and they are hostile, so
// the host bounds what it writes (a cap compressed, the guest's RAM plus
// a margin raw) and never trusts what it reads back: a state that does
// not load makes QEMU exit, and the backend boots a fresh guest.
//
// A guest that maps the snapshot's RAM file copy-on-write is saved as
// what differs from that file (keepdiff.go): the pages it never wrote are
// left out, and the restore maps the same file again. The file is kept
// by a hard link in the kept machines' directory while a state refers to
// it (package terminal removes the link with the last such state), so a
// snapshot replaced meanwhile takes nothing from it. A guest with private
// RAM, or whose file cannot be linked there (another file system, the
// file already replaced), is saved whole, as before.
//
// zstd (github.com/klauspost/compress, already in the module graph through
// NATS): an idle guest's RAM is mostly zeros and page cache, which it
// compresses ~10× at a few hundred MB/s per core; gzip is 3–5× slower at
// both ends, and the restore is what the learner waits for.

// SavedState is a guest's state written by Backend.SaveState.
type SavedState struct {
	Path  string        // the zstd-compressed migration stream
	Key   string        // the snapshot key of the guest saved: it restores only into a guest of the same key
	Hello vmproto.Hello // what its agent said when it came up
	Bytes int64         // the file's size
	Raw   int64         // the migration stream's size, as QEMU sent it
	Took  time.Duration
	// Base is the RAM file the state holds the differences from (a hard
	// link SaveState made in its baseDir): the restore maps it. "": the
	// state holds all the guest's RAM.
	Base string
	// Diff is the stream's size once the pages equal to Base's were left
	// out (Raw when saved whole); Dropped, how many pages were.
	Diff, Dropped int64
	// NextID and Open: the agent connection's next request id and the
	// channels open at the save (shells), so that the restored guest's
	// new connection neither reuses an id the agent still knows nor keeps
	// those channels.
	NextID uint64
	Open   []uint64
}

// ErrStateTooBig: the state went over its bounds while being written.
var ErrStateTooBig = errors.New("the machine's saved state is over the size cap")

// ErrNoGuest: no guest is up (booting, or it died).
var ErrNoGuest = errors.New("no guest is up")

// SaveState stops b's guest and writes its state into path: at most max
// bytes compressed and the guest's RAM plus a margin raw, beyond which
// the save stops with ErrStateTooBig (Raw says how far it got). open are
// the channels still open. With baseDir, a guest that maps the snapshot's
// RAM file is saved as what differs from it, the file hard-linked into
// baseDir (SavedState.Base); "" saves it whole. The guest stays stopped
// (no health pings): Close b afterwards.
func (b *Backend) SaveState(ctx context.Context, path string, max int64, open []uint64, baseDir string) (SavedState, error) {
	g, key := b.Current()
	if g == nil || key == "" {
		return SavedState{}, ErrNoGuest
	}
	g.client.mu.Lock()
	next := g.client.nextID + 64 // room for requests sent as the guest stops
	g.client.mu.Unlock()
	b.paused.Store(true) // no health pings at a stopped guest
	begin := time.Now()
	var base []byte
	var baseName string
	if baseDir != "" {
		g.ramMu.Lock()
		if g.ramFile != nil {
			p, err := linkBase(g.ramFile, baseDir)
			var unmap func()
			if err == nil {
				base, unmap, err = mapBase(g.ramFile)
			}
			if err != nil {
				b.cfg.Logger.Warn("a learner's kept machine is saved whole, not as its differences from the snapshot", "err", err)
			} else {
				baseName = p
				defer unmap()
			}
		}
		g.ramMu.Unlock()
	}
	st, n, err := g.migrateTo(ctx, path, max, keptRawMax(b.cfg), base)
	if base != nil && errors.Is(err, errStream) {
		// A stream the filter does not understand (another QEMU's
		// format): the machine is saved whole instead of lost.
		b.cfg.Logger.Warn("a learner's kept machine is saved whole: its migration stream was not understood", "err", err)
		baseName = ""
		if err = g.awaitMigrationEnd(ctx); err == nil {
			st, n, err = g.migrateTo(ctx, path, max, keptRawMax(b.cfg), nil)
		}
	}
	return SavedState{Path: path, Key: key, Hello: g.Hello, Bytes: n, Raw: st.In, Diff: st.Out, Dropped: st.Dropped, Base: baseName,
		Took: time.Since(begin), NextID: next, Open: open}, err
}

// RestoreFirst makes b's first boot restore a saved state instead of
// starting a fresh guest: take is asked for it with the snapshot key the
// guest will have (nil: none, the guest starts as usual); done is told how
// the restore went (nil: restored, in took) once the state's file is no
// longer read. After a crash the backend starts fresh guests. Call it
// before Start.
func (b *Backend) RestoreFirst(take func(key string) *SavedState, done func(st *SavedState, took time.Duration, err error)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.restoreTake, b.restoreDone = take, done
}

// restoreSaved starts the saved state take gives for key, nil when there
// is none or it did not restore.
func (b *Backend) restoreSaved(take func(string) *SavedState, done func(*SavedState, time.Duration, error), key string, im *vmimage.Image, accel string) *Guest {
	st := take(key)
	if st == nil {
		return nil
	}
	b.setState(sandbox.LabBooting, sandbox.Text{"en": "restoring the learner's kept machine", "zh": "恢复学员保留的虚拟机"}, nil)
	begin := time.Now()
	snap := &Snapshot{Path: st.Path, Key: st.Key, Hello: st.Hello, Bytes: st.Bytes, kept: true, keptBase: st.Base, nextID: st.NextID, terms: st.Open}
	g, err := startGuest(b.ctx, b.cfg, im, accel, false, snap)
	took := time.Since(begin)
	done(st, took, err)
	if err != nil {
		b.cfg.Logger.Warn("a learner's kept machine did not restore; they get a fresh one", "err", firstLine(err.Error()))
		return nil
	}
	b.cfg.Logger.Info("learner's kept machine restored", "bytes", st.Bytes, "diff", st.Base != "", "took", took.Round(time.Millisecond))
	return g
}

// capWriter fails once more than max bytes went through it.
type capWriter struct {
	w   io.Writer
	n   int64
	max int64
}

func (c *capWriter) Write(p []byte) (int, error) {
	if c.n+int64(len(p)) > c.max {
		return 0, ErrStateTooBig
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// migrateTo writes the paused guest's migration stream, zstd-compressed,
// into path: QEMU sends it to a unix socket this process listens on, so
// every byte is counted here, whatever the guest made of its RAM. With
// base (the RAM file the guest maps), the pages equal to base's are left
// out on the way (filterStream). More than rawMax bytes of stream, or
// more than max compressed, and the migration is cancelled with
// ErrStateTooBig. It returns the stream's sizes (read, written) and the
// file's.
func (g *Guest) migrateTo(ctx context.Context, path string, max, rawMax int64, base []byte) (st diffStats, n int64, err error) {
	q, err := dialQMP(ctx, g.qmpSock, g.exited)
	if err != nil {
		return st, 0, err
	}
	defer q.close()
	sock := filepath.Join(g.runDir, "keep.sock")
	os.Remove(sock)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return st, 0, fmt.Errorf("keep: %w", err)
	}
	defer ln.Close()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return st, 0, fmt.Errorf("keep: %w", err)
	}
	defer f.Close()
	if _, err := q.do(ctx, "stop", nil); err != nil {
		return st, 0, err
	}
	if _, err := q.do(ctx, "migrate-set-parameters", map[string]any{"max-bandwidth": int64(1) << 40}); err != nil {
		return st, 0, err
	}
	// QEMU sends all the RAM, even where it maps the snapshot's file
	// copy-on-write (a restored guest has x-ignore-shared set, which
	// leaves that RAM out and changes the stream's format): the filter
	// keeps what differs from the file.
	if err := q.setCapability(ctx, "x-ignore-shared", false); err != nil {
		return st, 0, err
	}
	if _, err := q.do(ctx, "migrate", map[string]any{"uri": "unix:" + sock}); err != nil {
		return st, 0, err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = ln.(*net.UnixListener).SetDeadline(dl)
	}
	conn, err := ln.Accept()
	if err != nil {
		_, _ = q.do(context.Background(), "migrate_cancel", nil)
		return st, 0, fmt.Errorf("keep: QEMU did not connect: %w", err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetReadDeadline(dl)
	}
	cw := &capWriter{w: f, max: max}
	enc, err := zstd.NewWriter(cw, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return st, 0, fmt.Errorf("keep: %w", err)
	}
	in := io.LimitReader(conn, rawMax+1)
	var cerr error
	if base != nil {
		st, cerr = filterStream(in, enc, base)
	} else {
		st.In, cerr = io.Copy(enc, in)
		st.Out = st.In
	}
	if st.In > rawMax {
		cerr = ErrStateTooBig
	}
	if cerr == nil {
		cerr = enc.Close()
	}
	if cerr != nil {
		conn.Close()
		_, _ = q.do(context.Background(), "migrate_cancel", nil)
		if errors.Is(cerr, ErrStateTooBig) {
			return st, cw.n, ErrStateTooBig
		}
		return st, cw.n, fmt.Errorf("keep: %w", cerr)
	}
	for {
		status, err := q.migrateStatus(ctx)
		if err != nil {
			return st, cw.n, err
		}
		if status == "completed" {
			break
		}
		if status == "failed" || status == "cancelled" {
			return st, cw.n, fmt.Errorf("keep: migration %s", status)
		}
		if err := ctxtime.Sleep(ctx, 5*time.Millisecond); err != nil {
			return st, cw.n, fmt.Errorf("keep: %w", err)
		}
	}
	if err := f.Sync(); err != nil {
		return st, cw.n, fmt.Errorf("keep: %w", err)
	}
	return st, cw.n, nil
}

// awaitMigrationEnd waits until a cancelled migration has ended, so that
// another may start.
func (g *Guest) awaitMigrationEnd(ctx context.Context) error {
	q, err := dialQMP(ctx, g.qmpSock, g.exited)
	if err != nil {
		return err
	}
	defer q.close()
	for {
		st, err := q.migrateStatus(ctx)
		if err != nil {
			return err
		}
		if st != "active" && st != "cancelling" && st != "setup" && st != "device" {
			return nil
		}
		if err := ctxtime.Sleep(ctx, 5*time.Millisecond); err != nil {
			return fmt.Errorf("keep: %w", err)
		}
	}
}

// feedKept streams a kept state into a restoring QEMU (-incoming unix:sock):
// decompressed, at most rawMax bytes. Any error closes the connection,
// and QEMU, which then cannot load the guest, exits; the caller falls
// back to a fresh machine.
func feedKept(ctx context.Context, sock, path string, rawMax int64, exited <-chan struct{}) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var conn net.Conn
	var d net.Dialer
	for {
		conn, err = d.DialContext(ctx, "unix", sock)
		if err == nil {
			break
		}
		select {
		case <-exited:
			return errors.New("qemu exited before it listened for the state")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	defer conn.Close()
	dec, err := zstd.NewReader(f, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(rawMax)))
	if err != nil {
		return err
	}
	defer dec.Close()
	n, err := io.Copy(conn, io.LimitReader(dec, rawMax+1))
	if err == nil && n > rawMax {
		err = fmt.Errorf("the state is over %d bytes", rawMax)
	}
	return err
}

// migrateStatus is query-migrate's status.
func (q *qmp) migrateStatus(ctx context.Context) (string, error) {
	raw, err := q.do(ctx, "query-migrate", nil)
	if err != nil {
		return "", err
	}
	var st struct {
		Status string `json:"status"`
	}
	_ = json.Unmarshal(raw, &st)
	return st.Status, nil
}

// keptRawMax bounds a kept machine's migration stream: the guest's RAM and
// a margin for its devices' state (a few MiB).
func keptRawMax(cfg Config) int64 {
	cfg = cfg.WithDefaults()
	return int64(cfg.MemoryMiB)<<20 + 64<<20
}
