package vm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/rdmalab/rdmalab/sandbox/vmimage"
	"github.com/rdmalab/rdmalab/sandbox/vmproto"
)

// A machine that waits for its learner: when Terminals reclaims a
// learner's guest (idle, or a closed tab while others wait), Keep saves
// the whole guest with QEMU's migration (RAM and devices: the guest has no
// disk, its files live in RAM) through zstd into one file per learner, and
// the learner's next attach restores it: their files, their shell history
// (the shell appends it after every command, vmguest/terminal.go), what
// they built. The guest is the learner's and they are hostile, so the host
// bounds what it writes (MaxBytes compressed, the guest's RAM plus a
// margin raw) and never trusts what it reads back: a state that does not
// restore gives a fresh machine and a note saying so, never an error.
//
// zstd (github.com/klauspost/compress, already in the module graph through
// NATS): an idle guest's RAM is mostly zeros and page cache, which it
// compresses ~10× at a few hundred MB/s per core; gzip is 3–5× slower at
// both ends, and the restore is what the learner waits for.

// Keep is where learners' machines wait for them.
type Keep struct {
	Dir      string        // one state file and one note per learner
	MaxBytes int64         // a learner's compressed state at most (64 MiB); over it, the machine is not kept
	Expire   time.Duration // a state not restored this long is deleted (7 days)
	// TotalMax bounds the disk all kept machines take together: after a
	// save that goes over it, the oldest are deleted (each learner told
	// at their next attach) until they fit. 0: no total bound.
	TotalMax int64
	// Logger says what the budget evicted (nil: not logged).
	Logger *slog.Logger

	sweepMu   sync.Mutex
	lastSweep time.Time
	budgetMu  sync.Mutex
	evicted   int // machines deleted for TotalMax since the start
}

// KeepNote is what became of a learner's kept machine at their attach.
type KeepNote string

// The notes a learner can get.
const (
	KeepNone       KeepNote = ""           // nothing was kept: a fresh machine
	KeepRestored   KeepNote = "restored"   // their machine as they left it
	KeepUnreadable KeepNote = "unreadable" // the saved state did not restore: a fresh machine
	KeepTooBig     KeepNote = "too-big"    // it was over the size cap when reclaimed: not kept
	KeepStale      KeepNote = "stale"      // the lab's guest changed since (an upgrade): not restorable
	KeepEvicted    KeepNote = "evicted"    // deleted, the oldest, when the kept machines went over TotalMax
)

// keptMeta is the note beside a state file (or alone, when it was dropped).
type keptMeta struct {
	Key     string        `json:"key"` // snapshotKey of the guest saved
	Hello   vmproto.Hello `json:"hello"`
	Bytes   int64         `json:"bytes"` // the file's size (compressed)
	Raw     int64         `json:"raw"`   // the migration stream's size
	Took    time.Duration `json:"took"`
	Created time.Time     `json:"created"`
	// NextID and Terms: the agent connection's next request id and the
	// shells open at the save, so the restored guest's new connection
	// neither reuses an id the agent still knows nor keeps the old shells.
	NextID  uint64   `json:"next_id"`
	Terms   []uint64 `json:"terms,omitempty"`
	Dropped KeepNote `json:"dropped,omitempty"` // set: no state file, tell the learner why
}

// KeptSave is what a save measured.
type KeptSave struct {
	Bytes, Raw int64
	Took       time.Duration
}

// errTooBig: the state went over MaxBytes while being written.
var errTooBig = errors.New("the machine's saved state is over the size cap")

func (k *Keep) maxBytes() int64 {
	if k.MaxBytes <= 0 {
		return 64 << 20
	}
	return k.MaxBytes
}

func (k *Keep) expire() time.Duration {
	if k.Expire <= 0 {
		return 7 * 24 * time.Hour
	}
	return k.Expire
}

// name is the learner's files' stem: a hash, so a learner id never becomes
// a path.
func (k *Keep) name(learner string) string {
	h := sha256.Sum256([]byte("rdmalab-keep\x00" + learner))
	return filepath.Join(k.Dir, hex.EncodeToString(h[:16]))
}

// save writes g's state for learner. g must be paused (it stays so: the
// caller stops it afterwards). over the cap, a note says so and no state
// is kept.
func (k *Keep) save(ctx context.Context, g *Guest, learner, key string, nextID uint64, terms []uint64, rawMax int64) (KeptSave, error) {
	if err := os.MkdirAll(k.Dir, 0o700); err != nil {
		return KeptSave{}, fmt.Errorf("keep: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	stem := k.name(learner)
	begin := time.Now()
	raw, n, err := g.migrateTo(ctx, stem+".zst.tmp", k.maxBytes(), rawMax)
	defer os.Remove(stem + ".zst.tmp") // after a failure; renamed away on success
	m := keptMeta{Key: key, Hello: g.Hello, Bytes: n, Raw: raw, Took: time.Since(begin), Created: time.Now().UTC(), NextID: nextID, Terms: terms}
	if errors.Is(err, errTooBig) {
		os.Remove(stem + ".zst")
		m.Dropped, m.Bytes = KeepTooBig, 0
		_ = k.writeMeta(stem, m)
		return KeptSave{Raw: raw, Took: m.Took}, err
	}
	if err != nil {
		return KeptSave{}, err
	}
	if err := os.Rename(stem+".zst.tmp", stem+".zst"); err != nil {
		return KeptSave{}, fmt.Errorf("keep: %w", err)
	}
	if err := k.writeMeta(stem, m); err != nil {
		os.Remove(stem + ".zst")
		return KeptSave{}, err
	}
	k.Enforce()
	return KeptSave{Bytes: n, Raw: raw, Took: m.Took}, nil
}

// Enforce deletes the oldest kept machines while all of them together
// take more than TotalMax, leaving each learner a note that says so.
// Called after every save, and at start (a lowered budget).
func (k *Keep) Enforce() {
	if k.TotalMax <= 0 {
		return
	}
	k.budgetMu.Lock()
	defer k.budgetMu.Unlock()
	type kept struct {
		stem string
		size int64
		mod  time.Time
	}
	var all []kept
	var total int64
	ents, _ := os.ReadDir(k.Dir)
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".zst") {
			continue
		}
		stem := filepath.Join(k.Dir, strings.TrimSuffix(e.Name(), ".zst"))
		if _, err := os.Stat(stem + ".json"); err != nil {
			continue // being restored: it goes when that ends (done)
		}
		if fi, err := e.Info(); err == nil {
			all = append(all, kept{stem, fi.Size(), fi.ModTime()})
			total += fi.Size()
		}
	}
	if total <= k.TotalMax {
		return
	}
	slices.SortFunc(all, func(a, b kept) int { return a.mod.Compare(b.mod) })
	for _, m := range all {
		if total <= k.TotalMax {
			break
		}
		if os.Remove(m.stem+".zst") != nil {
			continue
		}
		total -= m.size
		k.evicted++
		_ = k.writeMeta(m.stem, keptMeta{Dropped: KeepEvicted, Created: time.Now().UTC()})
		if k.Logger != nil {
			k.Logger.Warn("a kept learner machine deleted: the kept machines are over their disk budget (oldest first)",
				"file", filepath.Base(m.stem), "bytes", m.size, "saved", m.mod.UTC().Format(time.RFC3339),
				"total_max_mib", k.TotalMax>>20, "total_now_mib", total>>20)
		}
	}
}

// Evicted is how many kept machines the budget deleted since the start.
func (k *Keep) Evicted() int {
	k.budgetMu.Lock()
	defer k.budgetMu.Unlock()
	return k.evicted
}

func (k *Keep) writeMeta(stem string, m keptMeta) error {
	b, _ := json.Marshal(m)
	if err := vmimage.WriteFileAtomic(stem+".json", b); err != nil {
		return fmt.Errorf("keep: %w", err)
	}
	return nil
}

// take returns learner's kept state for a guest of key, or a note saying
// why there is none. A state is restored once: take removes its note, so a
// state that fails to restore is not tried again (the file goes with
// Forget or the sweep).
func (k *Keep) take(learner, key string) (*Snapshot, *keptMeta, KeepNote) {
	k.sweep()
	stem := k.name(learner)
	b, err := os.ReadFile(stem + ".json")
	if err != nil {
		if _, serr := os.Stat(stem + ".zst"); serr == nil {
			os.Remove(stem + ".zst")
			return nil, nil, KeepUnreadable // a state without its note
		}
		return nil, nil, KeepNone
	}
	os.Remove(stem + ".json")
	var m keptMeta
	if len(b) > 64<<10 || json.Unmarshal(b, &m) != nil {
		os.Remove(stem + ".zst")
		return nil, nil, KeepUnreadable
	}
	if m.Dropped != "" {
		return nil, nil, m.Dropped
	}
	if time.Since(m.Created) > k.expire() {
		os.Remove(stem + ".zst")
		return nil, nil, KeepNone
	}
	if m.Key != key {
		os.Remove(stem + ".zst")
		return nil, nil, KeepStale
	}
	fi, err := os.Stat(stem + ".zst")
	if err != nil || fi.Size() != m.Bytes || fi.Size() > k.maxBytes() {
		os.Remove(stem + ".zst")
		return nil, nil, KeepUnreadable
	}
	return &Snapshot{Path: stem + ".zst", Key: m.Key, Hello: m.Hello, Bytes: m.Bytes, Created: m.Created, kept: true}, &m, KeepRestored
}

// done removes a state once it was restored (or given up on).
func (k *Keep) done(s *Snapshot) {
	if s != nil && s.kept {
		os.Remove(s.Path)
	}
}

// Forget deletes whatever is kept for learner ("reset my machine").
func (k *Keep) Forget(learner string) {
	stem := k.name(learner)
	os.Remove(stem + ".json")
	os.Remove(stem + ".zst")
	os.Remove(stem + ".zst.tmp")
}

// Has reports whether a machine (or a note about one) waits for learner.
func (k *Keep) Has(learner string) bool {
	_, err := os.Stat(k.name(learner) + ".json")
	return err == nil
}

// sweep deletes states and notes older than Expire, at most once a minute.
func (k *Keep) sweep() {
	k.sweepMu.Lock()
	if time.Since(k.lastSweep) < time.Minute {
		k.sweepMu.Unlock()
		return
	}
	k.lastSweep = time.Now()
	k.sweepMu.Unlock()
	ents, err := os.ReadDir(k.Dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".zst") && !strings.HasSuffix(e.Name(), ".json") && !strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > k.expire() {
			os.Remove(filepath.Join(k.Dir, e.Name()))
		}
	}
}

// Usage is the disk the kept machines take and how many there are.
func (k *Keep) Usage() (bytes int64, machines int) {
	ents, _ := os.ReadDir(k.Dir)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".zst") {
			if fi, err := e.Info(); err == nil {
				bytes += fi.Size()
				machines++
			}
		}
	}
	return bytes, machines
}

// capWriter fails once more than max bytes went through it.
type capWriter struct {
	w   io.Writer
	n   int64
	max int64
}

func (c *capWriter) Write(p []byte) (int, error) {
	if c.n+int64(len(p)) > c.max {
		return 0, errTooBig
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// migrateTo writes the paused guest's migration stream, zstd-compressed,
// into path: QEMU sends it to a unix socket this process listens on, so
// every byte is counted here, whatever the guest made of its RAM. More
// than rawMax bytes of stream, or more than max compressed, and the
// migration is cancelled with errTooBig. It returns the stream's and the
// file's sizes.
func (g *Guest) migrateTo(ctx context.Context, path string, max, rawMax int64) (raw, n int64, err error) {
	q, err := dialQMP(ctx, g.qmpSock, g.exited)
	if err != nil {
		return 0, 0, err
	}
	defer q.close()
	sock := filepath.Join(g.runDir, "keep.sock")
	os.Remove(sock)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return 0, 0, fmt.Errorf("keep: %w", err)
	}
	defer ln.Close()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, 0, fmt.Errorf("keep: %w", err)
	}
	defer f.Close()
	if _, err := q.do(ctx, "stop", nil); err != nil {
		return 0, 0, err
	}
	if _, err := q.do(ctx, "migrate-set-parameters", map[string]any{"max-bandwidth": int64(1) << 40}); err != nil {
		return 0, 0, err
	}
	if _, err := q.do(ctx, "migrate", map[string]any{"uri": "unix:" + sock}); err != nil {
		return 0, 0, err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = ln.(*net.UnixListener).SetDeadline(dl)
	}
	conn, err := ln.Accept()
	if err != nil {
		_, _ = q.do(context.Background(), "migrate_cancel", nil)
		return 0, 0, fmt.Errorf("keep: QEMU did not connect: %w", err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetReadDeadline(dl)
	}
	cw := &capWriter{w: f, max: max}
	enc, err := zstd.NewWriter(cw, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return 0, 0, fmt.Errorf("keep: %w", err)
	}
	raw, cerr := io.Copy(enc, io.LimitReader(conn, rawMax+1))
	if cerr == nil && raw > rawMax {
		cerr = errTooBig
	}
	if cerr == nil {
		cerr = enc.Close()
	}
	if cerr != nil {
		conn.Close()
		_, _ = q.do(context.Background(), "migrate_cancel", nil)
		if errors.Is(cerr, errTooBig) {
			return raw, cw.n, errTooBig
		}
		return raw, cw.n, fmt.Errorf("keep: %w", cerr)
	}
	for {
		st, err := q.migrateStatus(ctx)
		if err != nil {
			return raw, cw.n, err
		}
		if st == "completed" {
			break
		}
		if st == "failed" || st == "cancelled" {
			return raw, cw.n, fmt.Errorf("keep: migration %s", st)
		}
		if err := sleepCtx(ctx, 5*time.Millisecond); err != nil {
			return raw, cw.n, fmt.Errorf("keep: %w", err)
		}
	}
	if err := f.Sync(); err != nil {
		return raw, cw.n, fmt.Errorf("keep: %w", err)
	}
	return raw, cw.n, nil
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
	cfg = cfg.withDefaults()
	return int64(cfg.MemoryMiB)<<20 + 64<<20
}
