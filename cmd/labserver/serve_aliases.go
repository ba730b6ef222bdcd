package main

import (
	"context"
	"log/slog"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/store"
)

// followAliases moves learners' progress from every lesson alias (an old
// slug in front matter `aliases:`) to its lesson: once at start, and after
// each live reload while live is set. Attempts follow by themselves (they
// are keyed by question id).
func followAliases(ctx context.Context, db *store.DB, course func() *lessons.Course, live *lessons.Live, log *slog.Logger) {
	move := func() {
		for from, to := range course().Aliases() {
			n, err := db.MoveLessonProgress(ctx, from, to)
			if err != nil {
				log.Warn("move progress of a renamed lesson", "from", from, "to", to, "err", err)
			} else if n > 0 {
				log.Info("moved progress of a renamed lesson", "from", from, "to", to, "rows", n)
			}
		}
	}
	move()
	if live == nil {
		return
	}
	go func() {
		for {
			ch := live.Changed()
			select {
			case <-ch:
				move()
			case <-live.Done():
				return
			case <-ctx.Done():
				return
			}
		}
	}()
}
