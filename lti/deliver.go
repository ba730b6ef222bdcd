package lti

import (
	"context"
	"log/slog"
	"time"
)

// PendingScore is a score waiting in the outbox for its platform.
type PendingScore struct {
	ID         int64
	PlatformID int64
	LineItem   string
	Score      Score
	Attempts   int   // deliveries tried so far
	Version    int64 // which score of the row this is (a newer one replaces it in place)
}

// Outbox keeps scores until their platform took them, across restarts
// (the store's lti_outbox table).
type Outbox interface {
	// DueScores lists up to max scores whose next try is due at now.
	DueScores(ctx context.Context, now time.Time, max int) ([]PendingScore, error)
	// ScoreDelivered removes a delivered score, unless a newer version
	// replaced it meanwhile.
	ScoreDelivered(ctx context.Context, id, version int64) error
	// ScoreFailed records a failed try and when to try again.
	ScoreFailed(ctx context.Context, id int64, reason string, next time.Time) error
}

// Backoff is the wait after the n-th failed try of a score: 10 s,
// doubling, at most an hour. A score is never dropped: an instructor sees
// the failures on the LTI page and can fix the registration meanwhile.
func Backoff(n int) time.Duration {
	d := 10 * time.Second
	for i := 1; i < n && d < time.Hour; i++ {
		d *= 2
	}
	return min(d, time.Hour)
}

// Deliverer posts the outbox's due scores in the background.
type Deliverer struct {
	Tool   *Tool
	Outbox Outbox
	Log    *slog.Logger
	// Poll is how often the outbox is read when nothing kicks it (a
	// retry coming due); 0: 5 s.
	Poll time.Duration

	kick chan struct{}
}

// NewDeliverer makes a Deliverer; Run starts it.
func NewDeliverer(t *Tool, o Outbox, log *slog.Logger) *Deliverer {
	return &Deliverer{Tool: t, Outbox: o, Log: log, kick: make(chan struct{}, 1)}
}

// Kick asks for a delivery round now (a score was just queued).
func (d *Deliverer) Kick() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// Run delivers until ctx ends. Scores still pending then stay in the
// outbox for the next start.
func (d *Deliverer) Run(ctx context.Context) {
	poll := d.Poll
	if poll == 0 {
		poll = 5 * time.Second
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		d.round(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-d.kick:
		}
	}
}

// round tries every due score once.
func (d *Deliverer) round(ctx context.Context) {
	d.Tool.init()
	for {
		due, err := d.Outbox.DueScores(ctx, d.Tool.Now(), 50)
		if err != nil {
			if ctx.Err() == nil {
				d.Log.Error("lti outbox", "err", err)
			}
			return
		}
		if len(due) == 0 {
			return
		}
		for _, s := range due {
			if ctx.Err() != nil {
				return
			}
			err := d.deliver(ctx, s)
			if err == nil {
				if err := d.Outbox.ScoreDelivered(ctx, s.ID, s.Version); err != nil {
					d.Log.Error("lti outbox", "err", err)
					return
				}
				continue
			}
			if ctx.Err() != nil {
				return // shutting down: the try did not count
			}
			next := d.Tool.Now().Add(Backoff(s.Attempts + 1))
			if s.Attempts == 0 {
				d.Log.Warn("lti score not delivered; retrying", "platform", s.PlatformID, "lineitem", s.LineItem, "err", err)
			}
			if err := d.Outbox.ScoreFailed(ctx, s.ID, err.Error(), next); err != nil {
				d.Log.Error("lti outbox", "err", err)
				return
			}
		}
		if len(due) < 50 {
			return
		}
	}
}

func (d *Deliverer) deliver(ctx context.Context, s PendingScore) error {
	p, err := d.Tool.Registry.PlatformByID(ctx, s.PlatformID)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return d.Tool.PostScore(ctx, p, s.LineItem, s.Score)
}
