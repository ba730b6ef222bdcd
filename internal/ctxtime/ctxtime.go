// Package ctxtime waits for a time or a context, whichever ends first:
// the one sleep of loops that must stop when their context does.
package ctxtime

import (
	"context"
	"time"
)

// Sleep waits d or until ctx ends; it returns ctx.Err() when ctx ended
// first, nil otherwise.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
