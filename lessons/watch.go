package lessons

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Live is the course currently served plus what the last reload found. It is
// safe for concurrent use: readers get a consistent Snapshot without locks,
// and a reload swaps the whole snapshot at once, so a request never sees half
// a course.
type Live struct {
	cur atomic.Pointer[Snapshot]

	mu      sync.Mutex
	changed chan struct{} // closed (and replaced) on every publish

	closeOnce sync.Once
	done      chan struct{} // closed by Close
}

// Snapshot is one published state of a Live course.
type Snapshot struct {
	// Course is the last good course; a failed reload keeps the previous one
	// so learners go on reading the last good version.
	Course *Course
	// Errors are the diagnostics of the last reload when it failed, nil after
	// a good reload. Instructors see them as an overlay.
	Errors []Diagnostic
	// Version counts good loads (1 = the initial course). Pages reload when it
	// changes.
	Version uint64
	// Seq counts every publish, good or bad; instructors' pages watch it to
	// show and clear the error overlay.
	Seq uint64
	// At is when this snapshot was published.
	At time.Time
}

// NewLive returns a Live serving c (version 1).
func NewLive(c *Course) *Live {
	l := &Live{changed: make(chan struct{}), done: make(chan struct{})}
	l.cur.Store(&Snapshot{Course: c, Version: 1, Seq: 1, At: time.Now()})
	return l
}

// Course returns the course to serve now.
func (l *Live) Course() *Course { return l.cur.Load().Course }

// Snapshot returns the current state.
func (l *Live) Snapshot() *Snapshot { return l.cur.Load() }

// Changed returns a channel that is closed at the next publish. Callers take
// the channel, then read Snapshot, then wait: a publish between the two reads
// is never missed.
func (l *Live) Changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

// Close marks the course as no longer watched (server shutdown): Done is
// closed, so long-lived streams waiting for changes can end.
func (l *Live) Close() { l.closeOnce.Do(func() { close(l.done) }) }

// Done is closed by Close.
func (l *Live) Done() <-chan struct{} { return l.done }

// Publish makes c the served course and clears any errors.
func (l *Live) Publish(c *Course) {
	l.publish(func(old *Snapshot) *Snapshot {
		return &Snapshot{Course: c, Version: old.Version + 1, Seq: old.Seq + 1}
	})
}

// Fail records the errors of a failed reload and keeps the last good course.
func (l *Live) Fail(errs []Diagnostic) {
	l.publish(func(old *Snapshot) *Snapshot {
		return &Snapshot{Course: old.Course, Errors: errs, Version: old.Version, Seq: old.Seq + 1}
	})
}

func (l *Live) publish(next func(old *Snapshot) *Snapshot) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := next(l.cur.Load())
	s.At = time.Now()
	l.cur.Store(s)
	close(l.changed)
	l.changed = make(chan struct{})
}

// DefaultDebounce is how long the watcher waits for the file system to go
// quiet before reloading: editors write a file in several steps (truncate,
// write, rename), and one reload per save is enough.
const DefaultDebounce = 200 * time.Millisecond

// maxDelay bounds the wait when events never stop, so a page still reloads
// within a second while a tool keeps touching files.
const maxDelay = 800 * time.Millisecond

// Watcher reloads a course folder when its files change and publishes the
// result to a Live.
type Watcher struct {
	dir      string
	opt      Options
	live     *Live
	log      *slog.Logger
	fsw      *fsnotify.Watcher
	debounce time.Duration
	done     chan struct{}
}

// Watch loads the course in dir, then keeps reloading it on changes until ctx
// ends. It fails when the first load fails (serve refuses to start on broken
// content, like check); later failures keep the last good course and are
// published as Snapshot.Errors.
func Watch(ctx context.Context, dir string, opt Options, log *slog.Logger) (*Live, *Watcher, error) {
	c, err := Load(os.DirFS(dir), opt)
	if err != nil {
		return nil, nil, fmt.Errorf("load lessons from %s: %w", dir, err)
	}
	live := NewLive(c)
	w, err := NewWatcher(dir, opt, live, log)
	if err != nil {
		return nil, nil, err
	}
	go w.Run(ctx)
	return live, w, nil
}

// NewWatcher watches dir and every folder below it. Run must be called to
// process events.
func NewWatcher(dir string, opt Options, live *Live, log *slog.Logger) (*Watcher, error) {
	if log == nil {
		log = slog.Default()
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch lessons: %w", err)
	}
	w := &Watcher{dir: dir, opt: opt, live: live, log: log, fsw: fsw,
		debounce: DefaultDebounce, done: make(chan struct{})}
	if err := w.addTree(dir); err != nil {
		fsw.Close()
		return nil, err
	}
	return w, nil
}

// Done is closed when Run has returned and the watcher is closed.
func (w *Watcher) Done() <-chan struct{} { return w.done }

// addTree watches root and every directory below it. fsnotify watches one
// directory at a time, so new folders are added as they appear.
func (w *Watcher) addTree(root string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path != root && errors.Is(err, fs.ErrNotExist) {
				return nil // removed while walking
			}
			return fmt.Errorf("watch lessons: %w", err)
		}
		if !d.IsDir() {
			return nil
		}
		if path != root && ignored(d.Name()) {
			return filepath.SkipDir
		}
		if err := w.fsw.Add(path); err != nil {
			if path != root && errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return fmt.Errorf("watch lessons: %s: %w", path, err)
		}
		return nil
	})
}

// ignored reports whether a file name is editor or VCS noise that must not
// trigger a reload (hidden files, swap and backup files).
func ignored(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasSuffix(name, "~") ||
		strings.HasSuffix(name, ".swp") || strings.HasSuffix(name, ".swx") ||
		name == "4913" // vim's write-permission probe
}

// Run processes file events until ctx ends, then closes the watcher.
func (w *Watcher) Run(ctx context.Context) {
	defer close(w.done)
	defer w.fsw.Close()
	var (
		timer   *time.Timer
		fire    <-chan time.Time
		pending time.Time // first unprocessed event
	)
	for {
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return
			}
			if !w.relevant(ev) {
				continue
			}
			now := time.Now()
			if pending.IsZero() {
				pending = now
			}
			wait := w.debounce
			if left := pending.Add(maxDelay).Sub(now); left < wait {
				wait = max(left, 0)
			}
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			fire = timer.C
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return
			}
			// An overflow means events were lost: reload to be safe.
			w.log.Warn("lessons watcher", "err", err)
			w.Reload()
		case <-fire:
			fire, pending = nil, time.Time{}
			w.Reload()
		}
	}
}

// relevant filters events and keeps the watch list in step with new folders.
func (w *Watcher) relevant(ev fsnotify.Event) bool {
	if ignored(filepath.Base(ev.Name)) {
		return false
	}
	if ev.Op == fsnotify.Chmod {
		return false // touch, indexers and backup tools; content unchanged
	}
	if ev.Has(fsnotify.Rename) || ev.Has(fsnotify.Remove) {
		w.forget(ev.Name)
	}
	if ev.Has(fsnotify.Create) {
		if fi, err := os.Stat(ev.Name); err == nil && fi.IsDir() {
			if err := w.addTree(ev.Name); err != nil {
				w.log.Warn("lessons watcher: add folder", "dir", ev.Name, "err", err)
			}
		}
	}
	return true
}

// forget drops the watches on a folder that was moved away (or removed) and
// on the folders below it. inotify watches the folder itself, not its path:
// after `mv _drafts/X X` the watch fsnotify holds under the old path goes on
// reporting X's events as _drafts/X, adding X again returns that same watch
// unchanged, and fsnotify removes it when the kernel's "moved" notice for the
// folder itself arrives, so saves in X would reload nothing. Dropping it here
// (the parent's "moved from" comes before X's "moved to") lets the Create
// that follows add X afresh under its new path.
func (w *Watcher) forget(path string) {
	for _, p := range w.fsw.WatchList() {
		if p == path || strings.HasPrefix(p, path+string(filepath.Separator)) {
			// Already gone when fsnotify saw the folder's own event first.
			_ = w.fsw.Remove(p)
		}
	}
}

// Reload loads the folder now and publishes the result. It is called by Run
// after the debounce; tests and a manual trigger may call it directly.
func (w *Watcher) Reload() {
	start := time.Now()
	c, err := Load(os.DirFS(w.dir), w.opt)
	if err == nil {
		w.live.Publish(c)
		w.log.Info("lessons reloaded", "dir", w.dir, "lessons", len(c.Lessons),
			"warnings", len(c.Warnings), "took", time.Since(start).Round(time.Millisecond))
		return
	}
	diags := Diagnostics(err, w.dir)
	for i := range diags {
		// The same paths `labserver check DIR` prints: ones the author's editor can open.
		if diags[i].File != w.dir {
			diags[i].File = filepath.Join(w.dir, diags[i].File)
		}
	}
	w.live.Fail(diags)
	w.log.Warn("lessons reload failed; still serving the last good version",
		"dir", w.dir, "errors", len(diags))
	for _, d := range diags {
		w.log.Warn(d.String())
	}
}

// Diagnostics turns a Load error into diagnostics: the content errors of a
// *LoadError, or one diagnostic naming dir for anything else (an unreadable
// or deleted folder).
func Diagnostics(err error, dir string) []Diagnostic {
	var le *LoadError
	if errors.As(err, &le) && len(le.Diagnostics) > 0 {
		var out []Diagnostic
		for _, d := range le.Diagnostics {
			if d.Severity != Warning {
				out = append(out, d)
			}
		}
		if len(out) > 0 {
			return out
		}
		return le.Diagnostics
	}
	return []Diagnostic{{File: dir, Severity: Error, Message: err.Error()}}
}
