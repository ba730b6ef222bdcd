package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/web/instructor"
)

// liveCourse is serve's live reload of an instructor's course folder
// (`serve --lessons DIR`): the folder is watched, edits are reloaded and
// pushed to open pages, and a broken edit keeps the last good version.
// The built-in course is embedded and never changes, so it is not watched.
type liveCourse struct {
	live   *lessons.Live
	cancel context.CancelFunc
	done   <-chan struct{}
}

// start watches dir, serving course (already loaded and checked) until the
// first change. A "" dir (the built-in course) does nothing.
func (lc *liveCourse) start(ctx context.Context, dir string, course *lessons.Course, log *slog.Logger) error {
	if dir == "" {
		return nil
	}
	live := lessons.NewLive(course)
	w, err := lessons.NewWatcher(dir, lessonOptions(), live, log)
	if err != nil {
		return fmt.Errorf("watch the course folder %s: %w", dir, err)
	}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	go w.Run(wctx)
	lc.live, lc.cancel, lc.done = live, cancel, w.Done()
	log.Info("watching the course folder; edits reload open pages", "dir", dir)
	return nil
}

// stop ends the watcher and the live-reload streams (so the HTTP shutdown
// does not wait on them).
func (lc *liveCourse) stop() {
	if lc.cancel != nil {
		lc.cancel()
		<-lc.done
		lc.live.Close()
		lc.cancel = nil
	}
}

// courseNow is the course to serve: the live one when watching, else the
// one loaded at start.
func (m *Main) courseNow() *lessons.Course {
	if m.watch.live != nil {
		return m.watch.live.Course()
	}
	return m.Course.Load()
}

// announceInstructorSetup makes sure an instructor can log in: with
// LAB_ADMIN_PASSWORD it sets the "admin" account's password; otherwise,
// while no instructor account exists, it prints a one-time setup link.
func (m *Main) announceInstructorSetup(ctx context.Context) error {
	path, err := instructor.SetupInstructors(ctx, m.DB, m.Getenv("LAB_ADMIN_PASSWORD"))
	if err != nil {
		return fmt.Errorf("instructor account (LAB_ADMIN_PASSWORD): %w", err)
	}
	if path != "" {
		fmt.Fprintf(m.Stdout, "No instructor account yet. Create one within 24 h with this one-time link:\n  http://%s%s\n", m.Addr(), path)
	}
	return nil
}
