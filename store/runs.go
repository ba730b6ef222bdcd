package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/rdmalab/rdmalab"
)

// ErrRunNotFound is returned for a run id that does not exist.
var ErrRunNotFound = errors.New("store: no such run")

// Run is the stored summary of one experiment run.
type Run struct {
	ID         string
	Learner    string
	Experiment string
	Params     json.RawMessage
	Status     rdmalab.Status
	Backend    string
	Result     *rdmalab.Event // the run's result event, nil if it emitted none
	Error      string         // why it failed, was cancelled or interrupted
	CreatedAt  time.Time
	StartedAt  time.Time // zero until it started
	FinishedAt time.Time // zero until it finished
}

// CreateRun records a run the runner accepted (creating the learner row at
// its first write). It must happen before the run's first event.
func (db *DB) CreateRun(ctx context.Context, info rdmalab.RunInfo) error {
	if !ValidLearnerID(info.Learner) {
		return fmt.Errorf("store: create run: invalid learner id %q", info.Learner)
	}
	params, err := json.Marshal(info.Params)
	if err != nil {
		return fmt.Errorf("store: create run %s: params: %w", info.ID, err)
	}
	created := info.Created
	if created.IsZero() {
		created = clock()
	}
	err = db.runsTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx,
			`INSERT INTO learners (id, created) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`, info.Learner, now()); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx,
			`INSERT INTO runs (id, learner, experiment, params, status, backend, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			info.ID, info.Learner, info.Experiment, string(params), string(info.Status), info.Backend, formatTime(created))
		return err
	})
	if err != nil {
		return fmt.Errorf("store: create run %s: %w", info.ID, err)
	}
	return nil
}

// AppendRunEvent stores one event of a run and folds it into the run's
// summary row, in one transaction, so the row never disagrees with the
// events a replay shows.
func (db *DB) AppendRunEvent(ctx context.Context, runID string, ev rdmalab.Event) error {
	data, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("store: run %s event %d: %w", runID, ev.Seq, err)
	}
	return db.AppendRunEventJSON(ctx, runID, ev, data)
}

// AppendRunEventJSON is AppendRunEvent with ev already encoded as data
// (json.Marshal(ev)): the run hub encodes each event once and stores the
// bytes it sends to its watchers, so a replay sends what was streamed.
func (db *DB) AppendRunEventJSON(ctx context.Context, runID string, ev rdmalab.Event, data []byte) error {
	return db.AppendRunEventsJSON(ctx, runID, []rdmalab.Event{ev}, [][]byte{data})
}

// AppendRunEventsJSON stores several events of one run, in order, each
// with its encoding (data[i] is json.Marshal(evs[i])), in one transaction:
// all of them or none. A run emits its events in bursts (a phase, its log
// lines, a table); one commit for the burst, not one each, is what keeps
// its last event from waiting behind the commits of the others.
func (db *DB) AppendRunEventsJSON(ctx context.Context, runID string, evs []rdmalab.Event, data [][]byte) error {
	if len(evs) != len(data) {
		return fmt.Errorf("store: run %s: %d events with %d encodings", runID, len(evs), len(data))
	}
	if len(evs) == 0 {
		return nil
	}
	for _, ev := range evs {
		if ev.Type == rdmalab.EvResult || ev.Type == rdmalab.EvStatus && ev.Status.Final() {
			// The run may now be its learner's latest result; the event does
			// not name the learner, and runs finish seldom: forget them all.
			defer db.results.invalidateAll()
			break
		}
	}
	err := db.runsTx(ctx, func(tx *sql.Tx) error {
		for i, ev := range evs {
			ts := formatTime(ev.Time)
			if _, err := tx.ExecContext(ctx, `INSERT INTO run_events (run_id, seq, type, data, time) VALUES (?, ?, ?, ?, ?)`,
				runID, ev.Seq, string(ev.Type), string(data[i]), ts); err != nil {
				return fmt.Errorf("event %d: %w", ev.Seq, err)
			}
			if err := foldEvent(ctx, tx, runID, ev, data[i], ts); err != nil {
				return fmt.Errorf("event %d: %w", ev.Seq, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: run %s: %w", runID, err)
	}
	return nil
}

// foldEvent updates the summary row for events that change it.
func foldEvent(ctx context.Context, tx *sql.Tx, runID string, ev rdmalab.Event, data []byte, ts string) error {
	var err error
	switch ev.Type {
	case rdmalab.EvStatus:
		switch {
		case ev.Status == rdmalab.StatusRunning:
			_, err = tx.ExecContext(ctx, `UPDATE runs SET status = ?, backend = ?, started_at = ? WHERE id = ?`,
				string(ev.Status), ev.Backend, ts, runID)
		case ev.Status.Final():
			_, err = tx.ExecContext(ctx, `UPDATE runs SET status = ?, finished_at = ?,
				error = CASE WHEN ? = 'done' THEN error WHEN error = '' THEN ? ELSE error END WHERE id = ?`,
				string(ev.Status), ts, string(ev.Status), ev.Message, runID)
		default:
			_, err = tx.ExecContext(ctx, `UPDATE runs SET status = ? WHERE id = ?`, string(ev.Status), runID)
		}
	case rdmalab.EvResult:
		_, err = tx.ExecContext(ctx, `UPDATE runs SET result = ? WHERE id = ?`, string(data), runID)
	}
	return err
}

const runCols = `id, learner, experiment, params, status, backend, result, error, created_at, started_at, finished_at`

// Run returns one run's summary.
func (db *DB) Run(ctx context.Context, id string) (Run, error) {
	r, err := scanRun(db.r.QueryRowContext(ctx, `SELECT `+runCols+` FROM runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Run{}, ErrRunNotFound
	}
	if err != nil {
		return Run{}, fmt.Errorf("store: run %s: %w", id, err)
	}
	return r, nil
}

// LearnerRuns returns a learner's runs, newest first, at most limit.
func (db *DB) LearnerRuns(ctx context.Context, learner string, limit int) ([]Run, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+runCols+` FROM runs WHERE learner = ? ORDER BY created_at DESC, id LIMIT ?`, learner, limit)
	return collect("runs of "+learner, rows, err, scanRun)
}

// RunEvents returns a run's events with seq > after, in order, at most
// limit (all when limit <= 0).
func (db *DB) RunEvents(ctx context.Context, runID string, after int64, limit int) ([]rdmalab.Event, error) {
	stored, err := db.RunEventsJSON(ctx, runID, after, limit)
	if err != nil {
		return nil, err
	}
	out := make([]rdmalab.Event, len(stored))
	for i, s := range stored {
		out[i] = s.Event
	}
	return out, nil
}

// StoredEvent is one stored event of a run: decoded, and the bytes stored
// (the ones its live watchers were sent).
type StoredEvent struct {
	Event rdmalab.Event
	Data  []byte
}

// RunEventsJSON is RunEvents with each event's stored bytes, for a replay
// that sends them as they are.
func (db *DB) RunEventsJSON(ctx context.Context, runID string, after int64, limit int) ([]StoredEvent, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := db.r.QueryContext(ctx, `SELECT data FROM run_events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?`, runID, after, limit)
	if err != nil {
		return nil, fmt.Errorf("store: events of run %s: %w", runID, err)
	}
	defer rows.Close()
	var out []StoredEvent
	for rows.Next() {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			return nil, fmt.Errorf("store: events of run %s: %w", runID, err)
		}
		var ev rdmalab.Event
		if err := json.Unmarshal(data, &ev); err != nil {
			return nil, fmt.Errorf("store: events of run %s: %w", runID, err)
		}
		out = append(out, StoredEvent{Event: ev, Data: data})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: events of run %s: %w", runID, err)
	}
	return out, nil
}

// InterruptRuns marks every run still queued or running — the server
// stopped under it — as interrupted, appending a final status event so its
// replay ends. It returns how many it marked. Call it at startup, before
// the runner accepts work.
func (db *DB) InterruptRuns(ctx context.Context, reason string) (int, error) {
	rows, err := db.w.QueryContext(ctx, `SELECT r.id, COALESCE(MAX(e.seq), 0) FROM runs r
		LEFT JOIN run_events e ON e.run_id = r.id
		WHERE r.status IN ('queued', 'running') GROUP BY r.id`)
	if err != nil {
		return 0, fmt.Errorf("store: find unfinished runs: %w", err)
	}
	type open struct {
		id  string
		seq int64
	}
	var runs []open
	for rows.Next() {
		var o open
		if err := rows.Scan(&o.id, &o.seq); err != nil {
			rows.Close()
			return 0, fmt.Errorf("store: find unfinished runs: %w", err)
		}
		runs = append(runs, o)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("store: find unfinished runs: %w", err)
	}
	for _, o := range runs {
		ev := rdmalab.Event{Seq: o.seq + 1, Time: clock(), Type: rdmalab.EvStatus, Status: rdmalab.StatusInterrupted, Message: reason}
		if err := db.AppendRunEvent(ctx, o.id, ev); err != nil {
			return 0, err
		}
	}
	return len(runs), nil
}

func scanRun(s scanner) (Run, error) {
	var (
		r                 Run
		params            string
		status            string
		result            sql.NullString
		created           string
		started, finished sql.NullString
	)
	if err := s.Scan(&r.ID, &r.Learner, &r.Experiment, &params, &status, &r.Backend, &result, &r.Error, &created, &started, &finished); err != nil {
		return Run{}, err
	}
	r.Params = json.RawMessage(params)
	r.Status = rdmalab.Status(status)
	if result.Valid {
		var ev rdmalab.Event
		if err := json.Unmarshal([]byte(result.String), &ev); err != nil {
			return Run{}, fmt.Errorf("result of run %s: %w", r.ID, err)
		}
		r.Result = &ev
	}
	r.CreatedAt, _ = parseTime(created)
	if started.Valid {
		r.StartedAt, _ = parseTime(started.String)
	}
	if finished.Valid {
		r.FinishedAt, _ = parseTime(finished.String)
	}
	return r, nil
}

// runsTx runs fn in a write transaction.
func (db *DB) runsTx(ctx context.Context, fn func(*sql.Tx) error) error {
	return db.write(ctx, fn)
}
