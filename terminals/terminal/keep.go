package terminal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rdmalab/rdmalab/internal/fsutil"
	"github.com/rdmalab/rdmalab/machines/vm"
	"github.com/rdmalab/rdmalab/machines/vmproto"
)

// A machine that waits for its learner: when Terminals reclaims a
// learner's guest (idle, or a closed tab while others wait), Keep saves
// the guest (vm.Backend.SaveState: QEMU's migration through zstd, the
// pages still equal to the snapshot's RAM file left out) into one file
// per learner, and the learner's next attach restores it
// (vm.Backend.RestoreFirst): their files, their shell history (the shell
// appends it after every command, guestterm/terminal.go), what they built.
// The guest is the learner's and they are hostile, so the host bounds
// what it writes (MaxBytes compressed, the guest's RAM plus a margin raw)
// and never trusts what it reads back: a state that does not restore
// gives a fresh machine and a note saying so, never an error.
//
// A state saved as its differences from the snapshot's RAM file needs
// that file at the restore: SaveState hard-links it into Dir
// (base-DEV-INODE.ram, no disk while the snapshot still has it), the note
// names it, and the link goes with the last state that names it
// (gcBases), so a snapshot replaced meanwhile breaks no kept machine.

// Keep is where learners' machines wait for them.
type Keep struct {
	Dir      string        // one state file and one note per learner
	MaxBytes int64         // a learner's compressed state at most (64 MiB); over it, the machine is not kept
	Expire   time.Duration // a state not restored this long is deleted (7 days)
	// TotalMax bounds the disk all kept machines take together: after a
	// save that goes over it, the oldest are deleted (each learner told
	// at their next attach) until they fit. 0: no total bound.
	TotalMax int64
	// ClientMax bounds the disk one client's kept machines take together
	// (the admission's client, rdmalab.ClientOf: web's per-address key):
	// after a save that puts the client over it, that client's oldest
	// are deleted. Without it one address that makes fresh cookies fills
	// TotalMax with its own machines and evicts every other learner's
	// (issue 43). Never less than MaxBytes; 0: no per-client bound.
	ClientMax int64
	// Logger says what the budget evicted (nil: not logged).
	Logger *slog.Logger

	// whole saves every page, none left out for being the snapshot's
	// (the benchmark's before).
	whole bool

	sweepMu   sync.Mutex
	lastSweep time.Time
	// baseMu orders a save's base link and its note before gcBases;
	// using counts the bases being restored (their note already gone).
	baseMu   sync.Mutex
	using    map[string]int
	budgetMu sync.Mutex
	evicted  int // machines deleted for TotalMax since the start
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
	KeepShare      KeepNote = "share"      // deleted, the oldest of its client's, when they went over ClientMax
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
	// Client is a hash of the admission's client (clientTag), "" when
	// none was known: the machine counts against that client's share.
	Client string `json:"client,omitempty"`
	// Base is the RAM file (in Dir) the state holds the differences
	// from; "": the state holds all the guest's RAM. Diff is the
	// migration stream's size with the pages equal to Base's left out.
	Base string `json:"base,omitempty"`
	Diff int64  `json:"diff,omitempty"`
}

// KeptSave is what a save measured: the file's size, the migration
// stream's as QEMU sent it and as written (Diff: without the pages equal
// to the snapshot's), and whether the state needs the snapshot's RAM
// file (Base).
type KeptSave struct {
	Bytes, Raw, Diff int64
	Base             bool
	Took             time.Duration
}

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

// clientTag names a client in a note without writing its address to disk.
func clientTag(client string) string {
	if client == "" {
		return ""
	}
	h := sha256.Sum256([]byte("rdmalab-keep-client\x00" + client))
	return hex.EncodeToString(h[:8])
}

// save writes the state of b's guest for learner, admitted for client
// (open: its shells' channels). The guest is stopped for good (the caller
// closes b afterwards). Over the cap, a note says so and no state is kept.
func (k *Keep) save(ctx context.Context, b *vm.Backend, learner, client string, open []uint64) (KeptSave, error) {
	if err := os.MkdirAll(k.Dir, 0o700); err != nil {
		return KeptSave{}, fmt.Errorf("keep: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	stem := k.name(learner)
	baseDir := k.Dir
	if k.whole {
		baseDir = ""
	}
	// The base's link and the note that names it, before any gcBases.
	k.baseMu.Lock()
	locked := true
	unlock := func() {
		if locked {
			locked = false
			k.baseMu.Unlock()
		}
	}
	defer unlock()
	st, err := b.SaveState(ctx, stem+".zst.tmp", k.maxBytes(), open, baseDir)
	defer os.Remove(stem + ".zst.tmp") // after a failure; renamed away on success
	m := keptMeta{Key: st.Key, Hello: st.Hello, Bytes: st.Bytes, Raw: st.Raw, Took: st.Took, Created: time.Now().UTC(), NextID: st.NextID, Terms: st.Open, Client: clientTag(client),
		Diff: st.Diff}
	if st.Base != "" {
		m.Base = filepath.Base(st.Base)
	}
	if errors.Is(err, vm.ErrStateTooBig) {
		os.Remove(stem + ".zst")
		m.Dropped, m.Bytes, m.Base = KeepTooBig, 0, ""
		_ = k.writeMeta(stem, m)
		unlock()
		k.gcBases()
		return KeptSave{Raw: st.Raw, Took: m.Took}, err
	}
	if err != nil {
		unlock()
		k.gcBases()
		return KeptSave{}, err
	}
	if err := os.Rename(stem+".zst.tmp", stem+".zst"); err != nil {
		return KeptSave{}, fmt.Errorf("keep: %w", err)
	}
	if err := k.writeMeta(stem, m); err != nil {
		os.Remove(stem + ".zst")
		return KeptSave{}, err
	}
	unlock()
	k.Enforce()
	return KeptSave{Bytes: st.Bytes, Raw: st.Raw, Diff: st.Diff, Base: m.Base != "", Took: m.Took}, nil
}

// Enforce deletes kept machines while one client's take more than
// ClientMax (that client's oldest first), then while all of them together
// take more than TotalMax, leaving each learner a note that says so.
// Over TotalMax, the client that holds the most loses its oldest first
// (a machine saved with no client known is a client of its own), so a
// learner alone on their address is the last to lose theirs. Called after
// every save, and at start (a lowered budget). A base RAM file only the
// keep directory still holds (its snapshot was replaced) counts toward
// TotalMax as Usage counts it, and stops counting when the last kept
// machine naming it goes.
func (k *Keep) Enforce() {
	if k.TotalMax <= 0 && k.ClientMax <= 0 {
		k.gcBases()
		return
	}
	k.budgetMu.Lock()
	defer k.budgetMu.Unlock()
	type kept struct {
		stem, client, base string
		size               int64
		mod                time.Time
	}
	var all []*kept
	var total int64
	held := map[string]int64{}   // client → bytes kept
	orphan := map[string]int64{} // base only this directory holds → its bytes
	refs := map[string]int{}     // base → kept machines naming it
	ents, _ := os.ReadDir(k.Dir)
	for _, e := range ents {
		if isBaseName(e.Name()) {
			if size, ok := orphanBase(e); ok {
				orphan[e.Name()] = size
			}
			continue
		}
		if !strings.HasSuffix(e.Name(), ".zst") {
			continue
		}
		stem := filepath.Join(k.Dir, strings.TrimSuffix(e.Name(), ".zst"))
		b, err := os.ReadFile(stem + ".json")
		if err != nil {
			continue // being restored: it goes when that ends (done)
		}
		var m keptMeta
		if len(b) <= 64<<10 {
			_ = json.Unmarshal(b, &m)
		}
		client := m.Client
		if client == "" {
			client = "learner:" + filepath.Base(stem)
		}
		if fi, err := e.Info(); err == nil {
			all = append(all, &kept{stem, client, m.Base, fi.Size(), fi.ModTime()})
			total += fi.Size()
			held[client] += fi.Size()
			refs[m.Base]++
		}
	}
	// An orphan base counts while a machine that can be deleted names it
	// and no restore reads it (one being restored keeps it on disk
	// whatever goes here).
	k.baseMu.Lock()
	for name, size := range orphan {
		if refs[name] > 0 && k.using[name] == 0 {
			total += size
		} else {
			delete(orphan, name)
		}
	}
	k.baseMu.Unlock()
	slices.SortFunc(all, func(a, b *kept) int { return a.mod.Compare(b.mod) })
	drop := func(m *kept, note KeepNote, why string) {
		if os.Remove(m.stem+".zst") != nil {
			m.size = -1 // not counted again
			return
		}
		total -= m.size
		held[m.client] -= m.size
		if refs[m.base]--; refs[m.base] == 0 {
			total -= orphan[m.base] // gcBases deletes it below
		}
		k.evicted++
		_ = k.writeMeta(m.stem, keptMeta{Dropped: note, Created: time.Now().UTC()})
		if k.Logger != nil {
			k.Logger.Warn("a kept learner machine deleted: "+why,
				"file", filepath.Base(m.stem), "bytes", m.size, "saved", m.mod.UTC().Format(time.RFC3339),
				"client", m.client, "client_now_mib", held[m.client]>>20, "client_max_mib", k.ClientMax>>20,
				"total_max_mib", k.TotalMax>>20, "total_now_mib", total>>20)
		}
		m.size = -1
	}
	if k.ClientMax > 0 {
		// A share never smaller than one machine: each client keeps its
		// newest, however low the budget was set.
		share := max(k.ClientMax, k.maxBytes())
		for _, m := range all {
			if m.size >= 0 && held[m.client] > share {
				drop(m, KeepShare, "its client's kept machines are over their share (oldest first)")
			}
		}
	}
	for k.TotalMax > 0 && total > k.TotalMax {
		var victim *kept
		for _, m := range all { // oldest first: the first of the largest client is its oldest
			if m.size >= 0 && (victim == nil || held[m.client] > held[victim.client]) {
				victim = m
			}
		}
		if victim == nil {
			break
		}
		drop(victim, KeepEvicted, "the kept machines are over their disk budget (the largest client's oldest first)")
	}
	k.gcBases()
}

// Evicted is how many kept machines the budget deleted since the start.
func (k *Keep) Evicted() int {
	k.budgetMu.Lock()
	defer k.budgetMu.Unlock()
	return k.evicted
}

func (k *Keep) writeMeta(stem string, m keptMeta) error {
	b, _ := json.Marshal(m)
	if err := fsutil.WriteFileAtomic(stem+".json", b); err != nil {
		return fmt.Errorf("keep: %w", err)
	}
	return nil
}

// take returns learner's kept state for a guest of key, or a note saying
// why there is none. A state is restored once: take removes its note, so a
// state that fails to restore is not tried again (the file goes with
// Forget or the sweep).
func (k *Keep) take(learner, key string) (*vm.SavedState, KeepNote) {
	st, note := k.take1(learner, key)
	k.gcBases() // a base only the note removed named
	return st, note
}

func (k *Keep) take1(learner, key string) (*vm.SavedState, KeepNote) {
	k.sweep()
	stem := k.name(learner)
	b, err := os.ReadFile(stem + ".json")
	if err != nil {
		if _, serr := os.Stat(stem + ".zst"); serr == nil {
			os.Remove(stem + ".zst")
			return nil, KeepUnreadable // a state without its note
		}
		return nil, KeepNone
	}
	os.Remove(stem + ".json")
	var m keptMeta
	if len(b) > 64<<10 || json.Unmarshal(b, &m) != nil {
		os.Remove(stem + ".zst")
		return nil, KeepUnreadable
	}
	if m.Dropped != "" {
		return nil, m.Dropped
	}
	if time.Since(m.Created) > k.expire() {
		os.Remove(stem + ".zst")
		return nil, KeepNone
	}
	if m.Key != key {
		os.Remove(stem + ".zst")
		return nil, KeepStale
	}
	fi, err := os.Stat(stem + ".zst")
	if err != nil || fi.Size() != m.Bytes || fi.Size() > k.maxBytes() {
		os.Remove(stem + ".zst")
		return nil, KeepUnreadable
	}
	st := &vm.SavedState{Path: stem + ".zst", Key: m.Key, Hello: m.Hello, Bytes: m.Bytes, NextID: m.NextID, Open: m.Terms}
	if m.Base != "" {
		// The RAM file the state's pages are the differences from.
		k.baseMu.Lock()
		defer k.baseMu.Unlock()
		if !isBaseName(m.Base) {
			os.Remove(stem + ".zst")
			return nil, KeepUnreadable
		}
		st.Base = filepath.Join(k.Dir, m.Base)
		if fi, err := os.Stat(st.Base); err != nil || !fi.Mode().IsRegular() {
			os.Remove(stem + ".zst")
			return nil, KeepUnreadable
		}
		if k.using == nil {
			k.using = map[string]int{}
		}
		k.using[m.Base]++ // until done: QEMU maps it by then
	}
	return st, KeepRestored
}

// isBaseName: name is one linkBase gives (base-DEV-INODE.ram), nothing a
// note could use to reach beyond Dir.
func isBaseName(name string) bool {
	mid, ok := strings.CutPrefix(name, "base-")
	if !ok {
		return false
	}
	mid, ok = strings.CutSuffix(mid, ".ram")
	if !ok || mid == "" || len(mid) > 40 {
		return false
	}
	for _, c := range mid {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c == '-') {
			return false
		}
	}
	return true
}

// gcBases removes the base RAM files no kept machine's note names and
// no restore is reading.
func (k *Keep) gcBases() {
	k.baseMu.Lock()
	defer k.baseMu.Unlock()
	bases, _ := filepath.Glob(filepath.Join(k.Dir, "base-*.ram"))
	if len(bases) == 0 {
		return
	}
	named := map[string]bool{}
	notes, _ := filepath.Glob(filepath.Join(k.Dir, "*.json"))
	for _, n := range notes {
		b, err := os.ReadFile(n)
		if err != nil || len(b) > 64<<10 {
			continue
		}
		var m keptMeta
		if json.Unmarshal(b, &m) == nil && m.Base != "" && m.Dropped == "" {
			named[m.Base] = true
		}
	}
	for _, p := range bases {
		if name := filepath.Base(p); !named[name] && k.using[name] == 0 {
			os.Remove(p)
		}
	}
}

// done removes a state once it was restored (or given up on), and its
// base when no other state names it.
func (k *Keep) done(st *vm.SavedState) {
	if st == nil {
		return
	}
	os.Remove(st.Path)
	if st.Base != "" {
		k.baseMu.Lock()
		name := filepath.Base(st.Base)
		if k.using[name]--; k.using[name] <= 0 {
			delete(k.using, name)
		}
		k.baseMu.Unlock()
		k.gcBases()
	}
}

// Forget deletes whatever is kept for learner ("reset my machine").
func (k *Keep) Forget(learner string) {
	stem := k.name(learner)
	os.Remove(stem + ".json")
	os.Remove(stem + ".zst")
	os.Remove(stem + ".zst.tmp")
	k.gcBases()
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

// Usage is the disk the kept machines take and how many there are: their
// files, and the base RAM files only they hold (the snapshot that had
// one was replaced since; while it has it, the link takes no disk).
func (k *Keep) Usage() (bytes int64, machines int) {
	ents, _ := os.ReadDir(k.Dir)
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			continue
		}
		switch {
		case strings.HasSuffix(e.Name(), ".zst"):
			bytes += fi.Size()
			machines++
		case isBaseName(e.Name()):
			if size, ok := orphanBase(e); ok {
				bytes += size
			}
		}
	}
	return bytes, machines
}

// orphanBase is the size of base RAM file e when only the keep directory
// still holds it (one link: the snapshot that had it was replaced since;
// while the snapshot has it, the link takes no disk).
func orphanBase(e os.DirEntry) (int64, bool) {
	fi, err := e.Info()
	if err != nil {
		return 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return fi.Size(), ok && st.Nlink == 1
}

// setKeepNote records what became of the learner's kept machine.
func (s *termSession) setKeepNote(n KeepNote) {
	s.keepMu.Lock()
	s.keepNote = n
	s.keepMu.Unlock()
}

// takeKeepNote returns what became of the kept machine, once.
func (s *termSession) takeKeepNote() KeepNote {
	s.keepMu.Lock()
	defer s.keepMu.Unlock()
	n := s.keepNote
	s.keepNote = KeepNone
	return n
}

// awaitSaved waits while learner's machine is being kept, so that their
// attach restores it rather than racing its save. t.mu held (released
// while waiting).
func (t *Terminals) awaitSaved(ctx context.Context, learner string) error {
	for {
		ch := t.saving[learner]
		if ch == nil {
			return nil
		}
		t.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
		case <-t.stop:
		}
		t.mu.Lock()
		if t.closed {
			return errors.New("the lab is shutting down")
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// Reclaim ends learner's session as the reaper does (their machine is
// kept when Keep is set) and returns once it is, with what the save
// measured (zero when nothing was kept).
func (t *Terminals) Reclaim(learner string) KeptSave {
	t.init()
	t.mu.Lock()
	s := t.sessions[learner]
	if s != nil {
		delete(t.sessions, learner)
		if t.Keep != nil {
			t.saving[learner] = make(chan struct{})
		}
		t.notify()
	}
	t.mu.Unlock()
	switch {
	case s == nil:
	case t.Keep == nil:
		s.discard()
	default:
		return t.keepSession(context.Background(), s)
	}
	return KeptSave{}
}

// keepSession saves s's machine for its learner (Keep), then stops it.
// Whatever goes wrong, the guest stops and the learner's next attach
// starts from what was kept, or fresh.
func (t *Terminals) keepSession(ctx context.Context, s *termSession) KeptSave {
	defer func() {
		s.discard()
		t.mu.Lock()
		if ch := t.saving[s.owner]; ch != nil {
			close(ch)
			delete(t.saving, s.owner)
		}
		t.notify()
		t.mu.Unlock()
	}()
	if g, key := s.backend.Current(); g == nil || key == "" {
		return KeptSave{} // no guest up (booting, died): nothing to keep
	}
	s.mu.Lock()
	for a := range s.subs {
		a.closeOut()
	}
	s.subs = map[*Attachment]struct{}{}
	var terms []uint64
	if s.term != nil && !isDone(s.term.done) {
		terms = append(terms, s.term.ch.ID())
	}
	client := s.client
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	res, err := t.Keep.save(ctx, s.backend, s.owner, client, terms)
	log := t.Cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	switch {
	case errors.Is(err, vm.ErrStateTooBig):
		log.Warn("a learner's machine is over the keep cap; not kept", "cap_bytes", t.Keep.maxBytes(), "stream_bytes", res.Raw)
	case err != nil:
		log.Warn("a learner's machine could not be kept", "err", err)
	default:
		log.Info("learner's machine kept", "bytes", res.Bytes, "stream_bytes", res.Raw, "diff_bytes", res.Diff, "snapshot_base", res.Base, "took", res.Took.Round(time.Millisecond))
	}
	if err != nil {
		return KeptSave{}
	}
	return res
}

// Reset gives learner a fresh machine at their next attach: their session
// ends and whatever was kept of it is deleted ("reset my machine").
func (t *Terminals) Reset(ctx context.Context, learner string) error {
	t.Discard(learner)
	// A save the reaper began before the Discard ends first, so that
	// nothing of it is left behind.
	t.mu.Lock()
	err := t.awaitSaved(ctx, learner)
	t.mu.Unlock()
	if err != nil {
		return err
	}
	if t.Keep != nil {
		t.Keep.Forget(learner)
	}
	return nil
}
