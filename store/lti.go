package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/rdmalab/rdmalab/lti"
)

// LTI 1.3 (issue 29): registered platforms, login states and nonces (the
// lti.Registry the protocol needs), platform users linked to learners, LMS
// courses linked to classes, graded links and the score outbox (the
// lti.Outbox the deliverer drains). Migration 0120.

// AddLTIPlatform registers a platform (p.Check first); a platform with the
// same issuer and client id is a *ValidationError.
func (db *DB) AddLTIPlatform(ctx context.Context, p lti.Platform) (int64, error) {
	if err := p.Check(); err != nil {
		return 0, &ValidationError{err.Error()}
	}
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("store: add platform: %w", err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `INSERT INTO lti_platforms (issuer, client_id, auth_url, token_url, jwks_url, frame_origins, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (issuer, client_id) DO NOTHING`,
		p.Issuer, p.ClientID, p.AuthURL, p.TokenURL, p.JWKSURL, strings.Join(p.FrameOrigins, " "), now())
	if err != nil {
		return 0, fmt.Errorf("store: add platform: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return 0, &ValidationError{fmt.Sprintf("issuer %s with client id %s is registered already (remove it first)", p.Issuer, p.ClientID)}
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, fmt.Errorf("store: add platform: %w", err)
	}
	for _, d := range p.Deployments {
		if _, err := tx.ExecContext(ctx, `INSERT INTO lti_deployments (platform_id, deployment_id) VALUES (?, ?)
			ON CONFLICT DO NOTHING`, id, d); err != nil {
			return 0, fmt.Errorf("store: add platform: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("store: add platform: %w", err)
	}
	return id, nil
}

// RemoveLTIPlatform deletes a registration with its states, users' links,
// courses' links and pending scores (the learners and classes stay).
func (db *DB) RemoveLTIPlatform(ctx context.Context, id int64) error {
	res, err := db.w.ExecContext(ctx, `DELETE FROM lti_platforms WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("store: remove platform: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return lti.ErrNoPlatform
	}
	return nil
}

const platformCols = `p.id, p.issuer, p.client_id, p.auth_url, p.token_url, p.jwks_url, p.frame_origins, p.created_at,
	COALESCE((SELECT group_concat(deployment_id, char(10)) FROM (SELECT deployment_id FROM lti_deployments d
		WHERE d.platform_id = p.id ORDER BY deployment_id)), '')`

func scanPlatform(sc scanner) (lti.Platform, error) {
	var (
		p                lti.Platform
		frames, ts, deps string
	)
	if err := sc.Scan(&p.ID, &p.Issuer, &p.ClientID, &p.AuthURL, &p.TokenURL, &p.JWKSURL, &frames, &ts, &deps); err != nil {
		return p, err
	}
	p.FrameOrigins = strings.Fields(frames)
	if deps != "" {
		p.Deployments = strings.Split(deps, "\n")
	}
	p.CreatedAt, _ = parseTime(ts)
	return p, nil
}

// LTIPlatforms lists the registrations, oldest first.
func (db *DB) LTIPlatforms(ctx context.Context) ([]lti.Platform, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+platformCols+` FROM lti_platforms p ORDER BY p.id`)
	return collect("platforms", rows, err, scanPlatform)
}

// PlatformFor implements lti.Registry.
func (db *DB) PlatformFor(ctx context.Context, issuer, clientID string) (lti.Platform, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+platformCols+` FROM lti_platforms p
		WHERE p.issuer = ?1 AND (?2 = '' OR p.client_id = ?2) LIMIT 2`, issuer, clientID)
	found, err := collect("platform", rows, err, scanPlatform)
	if err != nil {
		return lti.Platform{}, err
	}
	if len(found) != 1 {
		return lti.Platform{}, lti.ErrNoPlatform // none, or several and no client_id to choose
	}
	return found[0], nil
}

// PlatformByID implements lti.Registry.
func (db *DB) PlatformByID(ctx context.Context, id int64) (lti.Platform, error) {
	p, err := scanPlatform(db.r.QueryRowContext(ctx, `SELECT `+platformCols+` FROM lti_platforms p WHERE p.id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return p, lti.ErrNoPlatform
	}
	if err != nil {
		return p, fmt.Errorf("store: platform: %w", err)
	}
	return p, nil
}

// SaveLoginState implements lti.Registry; expired states and nonces are
// swept at the same time (both tables stay as small as the logins of the
// last few minutes).
func (db *DB) SaveLoginState(ctx context.Context, s lti.LoginState) error {
	ts := now()
	if _, err := db.w.ExecContext(ctx, `DELETE FROM lti_login_states WHERE expires_at < ?`, ts); err != nil {
		return fmt.Errorf("store: login state: %w", err)
	}
	if _, err := db.w.ExecContext(ctx, `DELETE FROM lti_nonces WHERE expires_at < ?`, ts); err != nil {
		return fmt.Errorf("store: login state: %w", err)
	}
	if _, err := db.w.ExecContext(ctx, `INSERT INTO lti_login_states (state, nonce, platform_id, expires_at) VALUES (?, ?, ?, ?)`,
		s.State, s.Nonce, s.PlatformID, formatTime(s.Expires)); err != nil {
		return fmt.Errorf("store: login state: %w", err)
	}
	return nil
}

// TakeLoginState implements lti.Registry: the DELETE … RETURNING makes a
// state usable once even by two launches racing.
func (db *DB) TakeLoginState(ctx context.Context, state string, at time.Time) (lti.LoginState, error) {
	s := lti.LoginState{State: state}
	var exp string
	err := db.w.QueryRowContext(ctx, `DELETE FROM lti_login_states WHERE state = ? RETURNING nonce, platform_id, expires_at`, state).
		Scan(&s.Nonce, &s.PlatformID, &exp)
	if errors.Is(err, sql.ErrNoRows) {
		return s, lti.ErrNoState
	}
	if err != nil {
		return s, fmt.Errorf("store: login state: %w", err)
	}
	s.Expires, _ = parseTime(exp)
	if !at.Before(s.Expires) {
		return s, lti.ErrNoState
	}
	return s, nil
}

// UseNonce implements lti.Registry.
func (db *DB) UseNonce(ctx context.Context, platformID int64, nonce string, until time.Time) error {
	res, err := db.w.ExecContext(ctx, `INSERT INTO lti_nonces (platform_id, nonce, expires_at) VALUES (?, ?, ?)
		ON CONFLICT DO NOTHING`, platformID, nonce, formatTime(until))
	if err != nil {
		return fmt.Errorf("store: nonce: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return lti.ErrNonceUsed
	}
	return nil
}

// LTILaunch is what a verified launch changes in the lab.
type LTILaunch struct {
	PlatformID  int64
	Sub         string
	Name, Email string
	Role        string // "learner", "ta" or "instructor"
	// ContextID/ContextTitle: the LMS course ("" when the launch has none).
	ContextID, ContextTitle string
	// LineItem, when set, is where this user's score on Lesson (or on
	// Question of it, when set) goes.
	LineItem, Lesson, Question string
}

// LTILaunched is the lab's side of a launch.
type LTILaunched struct {
	Learner    string
	NewLearner bool  // first launch of this platform user
	Cohort     int64 // the course's class (0 without a context)
}

// cleanName makes an LMS-sent name safe to show: control and
// text-direction characters dropped (checkPlainText's rule, applied
// rather than refused: the learner cannot fix what their LMS sends),
// clipped to MaxDisplayName.
func cleanName(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return -1
		}
		return r
	}, strings.TrimSpace(s))
	if utf8.RuneCountInString(s) > max {
		s = string([]rune(s)[:max])
	}
	return strings.TrimSpace(s)
}

// RecordLTILaunch maps a launch onto the lab in one transaction: the
// platform user's learner (made at their first launch, named from the
// claims at every launch), the course's class (made at its first launch)
// with the learner in it — or, for an instructor or TA of the course,
// the learner marked as staff, out of class figures — and the graded
// link, when the launch has one.
func (db *DB) RecordLTILaunch(ctx context.Context, l LTILaunch) (LTILaunched, error) {
	defer db.noLTI.invalidateAll() // the launch may add a link to a learner
	var out LTILaunched
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return out, fmt.Errorf("store: lti launch: %w", err)
	}
	defer tx.Rollback()
	ts := now()
	name := cleanName(l.Name, MaxDisplayName)
	err = tx.QueryRowContext(ctx, `SELECT learner FROM lti_users WHERE platform_id = ? AND sub = ?`, l.PlatformID, l.Sub).Scan(&out.Learner)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		out.Learner, out.NewLearner = NewLearnerID(), true
		if _, err := tx.ExecContext(ctx, `INSERT INTO learners (id, created, display_name) VALUES (?, ?, ?)`, out.Learner, ts, name); err != nil {
			return out, fmt.Errorf("store: lti launch: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO lti_users (platform_id, sub, learner, name, email, role, created_at, launched_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, l.PlatformID, l.Sub, out.Learner, name, l.Email, l.Role, ts, ts); err != nil {
			return out, fmt.Errorf("store: lti launch: %w", err)
		}
	case err != nil:
		return out, fmt.Errorf("store: lti launch: %w", err)
	default:
		if _, err := tx.ExecContext(ctx, `UPDATE lti_users SET name = ?, email = ?, role = ?, launched_at = ? WHERE platform_id = ? AND sub = ?`,
			name, l.Email, l.Role, ts, l.PlatformID, l.Sub); err != nil {
			return out, fmt.Errorf("store: lti launch: %w", err)
		}
		if name != "" {
			if _, err := tx.ExecContext(ctx, `UPDATE learners SET display_name = ? WHERE id = ?`, name, out.Learner); err != nil {
				return out, fmt.Errorf("store: lti launch: %w", err)
			}
		}
	}
	if l.Role != "learner" {
		if _, err := tx.ExecContext(ctx, `INSERT INTO staff_learners (learner, marked_at) VALUES (?, ?) ON CONFLICT DO NOTHING`, out.Learner, ts); err != nil {
			return out, fmt.Errorf("store: lti launch: %w", err)
		}
	}
	if l.ContextID != "" {
		if out.Cohort, err = ltiCohort(ctx, tx, l, ts); err != nil {
			return out, err
		}
		if l.Role == "learner" {
			if _, err := tx.ExecContext(ctx, `INSERT INTO cohort_members (cohort_id, learner, joined_at) VALUES (?, ?, ?)
				ON CONFLICT DO NOTHING`, out.Cohort, out.Learner, ts); err != nil {
				return out, fmt.Errorf("store: lti launch: %w", err)
			}
		}
	}
	if l.LineItem != "" {
		var cohort any
		if out.Cohort > 0 {
			cohort = out.Cohort
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO lti_grade_links (platform_id, sub, line_item, lesson, question, created_at, cohort_id)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (platform_id, sub, line_item) DO UPDATE SET lesson = excluded.lesson,
			question = excluded.question, cohort_id = excluded.cohort_id`,
			l.PlatformID, l.Sub, l.LineItem, l.Lesson, l.Question, ts, cohort); err != nil {
			return out, fmt.Errorf("store: lti launch: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return out, fmt.Errorf("store: lti launch: %w", err)
	}
	db.known.invalidate(out.Learner)
	return out, nil
}

// ltiCohort is the class of the launch's LMS course, made with a fresh
// join code at the course's first launch (named after the course).
func ltiCohort(ctx context.Context, tx *sql.Tx, l LTILaunch, ts string) (int64, error) {
	var id int64
	err := tx.QueryRowContext(ctx, `SELECT cohort_id FROM lti_contexts WHERE platform_id = ? AND context_id = ?`, l.PlatformID, l.ContextID).Scan(&id)
	if err == nil {
		return id, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("store: lti class: %w", err)
	}
	name := cleanName(l.ContextTitle, MaxCohortName)
	if name == "" {
		name = cleanName("LMS "+l.ContextID, MaxCohortName)
	}
	for range 5 {
		res, err := tx.ExecContext(ctx, `INSERT INTO cohorts (name, code, created_at) VALUES (?, ?, ?) ON CONFLICT (code) DO NOTHING`,
			name, newJoinCode(), ts)
		if err != nil {
			return 0, fmt.Errorf("store: lti class: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			continue
		}
		if id, err = res.LastInsertId(); err != nil {
			return 0, fmt.Errorf("store: lti class: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO lti_contexts (platform_id, context_id, cohort_id) VALUES (?, ?, ?)`,
			l.PlatformID, l.ContextID, id); err != nil {
			return 0, fmt.Errorf("store: lti class: %w", err)
		}
		return id, nil
	}
	return 0, errors.New("store: lti class: no free join code")
}

// LTIGradeLink is where one of a learner's scores goes.
type LTIGradeLink struct {
	PlatformID int64
	Sub        string
	LineItem   string
	Lesson     string
	Question   string // "" when the link grades the whole lesson
	Cohort     int64  // the class of the launch (the LMS course); 0 without one
}

// LTIGradeLinks lists the graded links of a learner (none for a learner
// who never launched from an LMS: one indexed lookup).
func (db *DB) LTIGradeLinks(ctx context.Context, learner string) ([]LTIGradeLink, error) {
	if _, none := db.noLTI.get(learner); none {
		return nil, nil
	}
	gen := db.noLTI.generation()
	links, err := db.ltiGradeLinks(ctx, learner)
	if err == nil && len(links) == 0 {
		db.noLTI.put(learner, struct{}{}, gen)
	}
	return links, err
}

func (db *DB) ltiGradeLinks(ctx context.Context, learner string) ([]LTIGradeLink, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT g.platform_id, g.sub, g.line_item, g.lesson, g.question, COALESCE(g.cohort_id, 0)
		FROM lti_users u JOIN lti_grade_links g ON g.platform_id = u.platform_id AND g.sub = u.sub
		WHERE u.learner = ? ORDER BY g.created_at`, learner)
	if err != nil {
		return nil, fmt.Errorf("store: grade links: %w", err)
	}
	defer rows.Close()
	var out []LTIGradeLink
	for rows.Next() {
		var g LTIGradeLink
		if err := rows.Scan(&g.PlatformID, &g.Sub, &g.LineItem, &g.Lesson, &g.Question, &g.Cohort); err != nil {
			return nil, fmt.Errorf("store: grade links: %w", err)
		}
		out = append(out, g)
	}
	return out, rows.Err()
}

// QueueScore puts a score in the outbox, due now; an undelivered score
// for the same line item and user is replaced (the newest is what the
// platform should get), keeping its failure record.
func (db *DB) QueueScore(ctx context.Context, platformID int64, lineItem string, s lti.Score) error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("store: queue score: %w", err)
	}
	ts := now()
	if _, err := db.w.ExecContext(ctx, `INSERT INTO lti_outbox (platform_id, line_item, sub, score, next_at, created_at)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (platform_id, line_item, sub) DO UPDATE SET
		score = excluded.score, next_at = excluded.next_at, version = version + 1`, platformID, lineItem, s.UserID, string(b), ts, ts); err != nil {
		return fmt.Errorf("store: queue score: %w", err)
	}
	return nil
}

// DueScores implements lti.Outbox.
func (db *DB) DueScores(ctx context.Context, at time.Time, max int) ([]lti.PendingScore, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT id, platform_id, line_item, score, attempts, version FROM lti_outbox
		WHERE next_at <= ? ORDER BY next_at, id LIMIT ?`, formatTime(at), max)
	if err != nil {
		return nil, fmt.Errorf("store: due scores: %w", err)
	}
	defer rows.Close()
	var out []lti.PendingScore
	for rows.Next() {
		var (
			p   lti.PendingScore
			raw string
		)
		if err := rows.Scan(&p.ID, &p.PlatformID, &p.LineItem, &raw, &p.Attempts, &p.Version); err != nil {
			return nil, fmt.Errorf("store: due scores: %w", err)
		}
		if err := json.Unmarshal([]byte(raw), &p.Score); err != nil {
			return nil, fmt.Errorf("store: due scores: score %d: %w", p.ID, err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// ScoreDelivered implements lti.Outbox. A score replaced while it was on
// its way (a newer one queued meanwhile: another version) stays for the
// next round.
func (db *DB) ScoreDelivered(ctx context.Context, id, version int64) error {
	if _, err := db.w.ExecContext(ctx, `DELETE FROM lti_outbox WHERE id = ? AND version = ?`, id, version); err != nil {
		return fmt.Errorf("store: score delivered: %w", err)
	}
	return nil
}

// ScoreFailed implements lti.Outbox.
func (db *DB) ScoreFailed(ctx context.Context, id int64, reason string, next time.Time) error {
	if len(reason) > 500 {
		reason = reason[:500]
	}
	if _, err := db.w.ExecContext(ctx, `UPDATE lti_outbox SET attempts = attempts + 1, last_error = ?, last_try_at = ?, next_at = ?
		WHERE id = ?`, strings.ToValidUTF8(reason, "?"), now(), formatTime(next), id); err != nil {
		return fmt.Errorf("store: score failed: %w", err)
	}
	return nil
}

// LTIOutboxRow is a pending score as the LTI page shows it.
type LTIOutboxRow struct {
	PlatformID int64
	Issuer     string
	LineItem   string
	Sub        string
	Learner    string // display name, else id ("" when the user link is gone)
	Score      lti.Score
	Attempts   int
	LastError  string
	LastTry    time.Time
	Next       time.Time
}

// LTIOutbox lists the scores not delivered yet, failed ones first.
func (db *DB) LTIOutbox(ctx context.Context, limit int) ([]LTIOutboxRow, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT o.platform_id, p.issuer, o.line_item, o.sub,
		COALESCE(NULLIF(l.display_name, ''), u.learner, ''), o.score, o.attempts, o.last_error, COALESCE(o.last_try_at, ''), o.next_at
		FROM lti_outbox o JOIN lti_platforms p ON p.id = o.platform_id
		LEFT JOIN lti_users u ON u.platform_id = o.platform_id AND u.sub = o.sub
		LEFT JOIN learners l ON l.id = u.learner
		ORDER BY o.attempts DESC, o.id LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("store: outbox: %w", err)
	}
	defer rows.Close()
	var out []LTIOutboxRow
	for rows.Next() {
		var (
			r                  LTIOutboxRow
			raw, last, nextStr string
		)
		if err := rows.Scan(&r.PlatformID, &r.Issuer, &r.LineItem, &r.Sub, &r.Learner, &raw, &r.Attempts, &r.LastError, &last, &nextStr); err != nil {
			return nil, fmt.Errorf("store: outbox: %w", err)
		}
		json.Unmarshal([]byte(raw), &r.Score)
		r.LastTry, _ = parseTime(last)
		r.Next, _ = parseTime(nextStr)
		out = append(out, r)
	}
	return out, rows.Err()
}
