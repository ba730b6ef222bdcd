package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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

// AddLTIPlatform registers a platform (p.Check first). A platform with
// the same issuer and client id that was removed is registered again
// under its old id, with these URLs and deployments: its users and
// courses reconnect to their learners and classes. One still registered
// is a *ValidationError (change it with UpdateLTIPlatform instead).
func (db *DB) AddLTIPlatform(ctx context.Context, p lti.Platform) (int64, error) {
	if err := p.Check(); err != nil {
		return 0, platformInvalid(err)
	}
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("store: add platform: %w", err)
	}
	defer tx.Rollback()
	var (
		id      int64
		removed sql.NullString
	)
	err = tx.QueryRowContext(ctx, `SELECT id, removed_at FROM lti_platforms WHERE issuer = ? AND client_id = ?`, p.Issuer, p.ClientID).Scan(&id, &removed)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		res, err := tx.ExecContext(ctx, `INSERT INTO lti_platforms (issuer, client_id, auth_url, token_url, jwks_url, frame_origins, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, p.Issuer, p.ClientID, p.AuthURL, p.TokenURL, p.JWKSURL, strings.Join(p.FrameOrigins, " "), now())
		if err != nil {
			return 0, fmt.Errorf("store: add platform: %w", err)
		}
		if id, err = res.LastInsertId(); err != nil {
			return 0, fmt.Errorf("store: add platform: %w", err)
		}
	case err != nil:
		return 0, fmt.Errorf("store: add platform: %w", err)
	case !removed.Valid:
		return 0, &ValidationError{fmt.Sprintf("issuer %s with client id %s is registered already as platform %d: change that registration instead of adding it again", p.Issuer, p.ClientID, id)}
	default:
		p.ID = id
		if err := updatePlatform(ctx, tx, p); err != nil {
			return 0, err
		}
	}
	if err := setDeployments(ctx, tx, id, p.Deployments); err != nil {
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("store: add platform: %w", err)
	}
	return id, nil
}

// platformInvalid is lti.Platform.Check's refusal as a *ValidationError
// (the CLI and the web form run Check first, to name the flag or the
// form's field).
func platformInvalid(err error) error {
	return &ValidationError{err.Error()}
}

// UpdateLTIPlatform changes registration p.ID (still registered) to p:
// URLs, client id, frame origins, and the deployments (the set becomes
// p.Deployments: ids added and removed). Its users, courses, graded links
// and pending scores are untouched; a launch from a deployment no longer
// listed is refused from now on.
func (db *DB) UpdateLTIPlatform(ctx context.Context, p lti.Platform) error {
	if err := p.Check(); err != nil {
		return platformInvalid(err)
	}
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: update platform: %w", err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM lti_platforms WHERE id = ? AND removed_at IS NULL`, p.ID).Scan(&n); err != nil {
		return fmt.Errorf("store: update platform: %w", err)
	}
	if n == 0 {
		return lti.ErrNoPlatform
	}
	if err := updatePlatform(ctx, tx, p); err != nil {
		return err
	}
	if err := setDeployments(ctx, tx, p.ID, p.Deployments); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: update platform: %w", err)
	}
	return nil
}

// updatePlatform writes p's fields onto row p.ID and marks it registered.
func updatePlatform(ctx context.Context, tx *sql.Tx, p lti.Platform) error {
	_, err := tx.ExecContext(ctx, `UPDATE lti_platforms SET issuer = ?, client_id = ?, auth_url = ?, token_url = ?, jwks_url = ?,
		frame_origins = ?, removed_at = NULL WHERE id = ?`,
		p.Issuer, p.ClientID, p.AuthURL, p.TokenURL, p.JWKSURL, strings.Join(p.FrameOrigins, " "), p.ID)
	if isConstraint(err) {
		return &ValidationError{fmt.Sprintf("issuer %s with client id %s is another registration already", p.Issuer, p.ClientID)}
	}
	if err != nil {
		return fmt.Errorf("store: update platform: %w", err)
	}
	return nil
}

// setDeployments makes the platform's deployment ids exactly deps.
func setDeployments(ctx context.Context, tx *sql.Tx, id int64, deps []string) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM lti_deployments WHERE platform_id = ?`, id); err != nil {
		return fmt.Errorf("store: platform deployments: %w", err)
	}
	for _, d := range deps {
		if _, err := tx.ExecContext(ctx, `INSERT INTO lti_deployments (platform_id, deployment_id) VALUES (?, ?)
			ON CONFLICT DO NOTHING`, id, d); err != nil {
			return fmt.Errorf("store: platform deployments: %w", err)
		}
	}
	return nil
}

// RemoveLTIPlatform takes a registration out of use: its launches are
// refused and its scores wait, but its users', courses' and graded links
// are kept (and the learners and classes), so registering the same issuer
// and client id again reconnects everyone to their own work. Its login
// states go.
func (db *DB) RemoveLTIPlatform(ctx context.Context, id int64) error {
	res, err := db.w.ExecContext(ctx, `UPDATE lti_platforms SET removed_at = ? WHERE id = ? AND removed_at IS NULL`, now(), id)
	if err != nil {
		return fmt.Errorf("store: remove platform: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return lti.ErrNoPlatform
	}
	if _, err := db.w.ExecContext(ctx, `DELETE FROM lti_login_states WHERE platform_id = ?`, id); err != nil {
		return fmt.Errorf("store: remove platform: %w", err)
	}
	return nil
}

// RemovedLTIPlatform is a removed registration whose links are kept.
type RemovedLTIPlatform struct {
	lti.Platform
	RemovedAt time.Time
	Users     int // platform users kept, reconnected by registering it again
}

// RemovedLTIPlatforms lists the removed registrations, oldest first.
func (db *DB) RemovedLTIPlatforms(ctx context.Context) ([]RemovedLTIPlatform, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+platformCols+`, p.removed_at,
		(SELECT COUNT(*) FROM lti_users u WHERE u.platform_id = p.id)
		FROM lti_platforms p WHERE p.removed_at IS NOT NULL ORDER BY p.id`)
	return collect("removed platforms", rows, err, func(sc scanner) (RemovedLTIPlatform, error) {
		var (
			r  RemovedLTIPlatform
			at string
		)
		p, err := scanPlatformWith(sc, &at, &r.Users)
		r.Platform = p
		r.RemovedAt, _ = parseTime(at)
		return r, err
	})
}

const platformCols = `p.id, p.issuer, p.client_id, p.auth_url, p.token_url, p.jwks_url, p.frame_origins, p.created_at,
	COALESCE((SELECT group_concat(deployment_id, char(10)) FROM (SELECT deployment_id FROM lti_deployments d
		WHERE d.platform_id = p.id ORDER BY deployment_id)), '')`

func scanPlatform(sc scanner) (lti.Platform, error) { return scanPlatformWith(sc) }

func scanPlatformWith(sc scanner, extra ...any) (lti.Platform, error) {
	var (
		p                lti.Platform
		frames, ts, deps string
	)
	if err := sc.Scan(append([]any{&p.ID, &p.Issuer, &p.ClientID, &p.AuthURL, &p.TokenURL, &p.JWKSURL, &frames, &ts, &deps}, extra...)...); err != nil {
		return p, err
	}
	p.FrameOrigins = strings.Fields(frames)
	if deps != "" {
		p.Deployments = strings.Split(deps, "\n")
	}
	p.CreatedAt, _ = parseTime(ts)
	return p, nil
}

// LTIPlatforms lists the registrations in use, oldest first.
func (db *DB) LTIPlatforms(ctx context.Context) ([]lti.Platform, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+platformCols+` FROM lti_platforms p WHERE p.removed_at IS NULL ORDER BY p.id`)
	return collect("platforms", rows, err, scanPlatform)
}

// PlatformFor implements lti.Registry.
func (db *DB) PlatformFor(ctx context.Context, issuer, clientID string) (lti.Platform, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+platformCols+` FROM lti_platforms p
		WHERE p.issuer = ?1 AND (?2 = '' OR p.client_id = ?2) AND p.removed_at IS NULL LIMIT 2`, issuer, clientID)
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
	p, err := scanPlatform(db.r.QueryRowContext(ctx, `SELECT `+platformCols+` FROM lti_platforms p WHERE p.id = ? AND p.removed_at IS NULL`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return p, lti.ErrNoPlatform
	}
	if err != nil {
		return p, fmt.Errorf("store: platform: %w", err)
	}
	return p, nil
}

// SaveLoginState implements lti.Registry; states expired an hour ago and
// expired nonces are swept at the same time (both tables stay as small as
// the logins of the last hour). A state is kept, marked used, past its
// launch until then, so a launch that repeats it is told so.
func (db *DB) SaveLoginState(ctx context.Context, s lti.LoginState) error {
	ts := now()
	if _, err := db.w.ExecContext(ctx, `DELETE FROM lti_login_states WHERE expires_at < ?`, formatTime(clock().Add(-time.Hour))); err != nil {
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

// TakeLoginState implements lti.Registry: the UPDATE … RETURNING of an
// unused state makes it usable once even by two launches racing.
func (db *DB) TakeLoginState(ctx context.Context, state string, at time.Time) (lti.LoginState, error) {
	s := lti.LoginState{State: state}
	var exp string
	err := db.w.QueryRowContext(ctx, `UPDATE lti_login_states SET used_at = ? WHERE state = ? AND used_at IS NULL
		RETURNING nonce, platform_id, expires_at`, now(), state).Scan(&s.Nonce, &s.PlatformID, &exp)
	if errors.Is(err, sql.ErrNoRows) {
		var n int
		if err := db.w.QueryRowContext(ctx, `SELECT COUNT(*) FROM lti_login_states WHERE state = ?`, state).Scan(&n); err != nil {
			return s, fmt.Errorf("store: login state: %w", err)
		}
		if n > 0 {
			return s, lti.ErrStateUsed
		}
		return s, lti.ErrNoState
	}
	if err != nil {
		return s, fmt.Errorf("store: login state: %w", err)
	}
	s.Expires, _ = parseTime(exp)
	if !at.Before(s.Expires) {
		return s, lti.ErrStateExpired
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
	// MembershipsURL is the course's NRPS memberships service, when the
	// launch offers one (kept for the roster sync).
	MembershipsURL string
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

// ErrLTIClassArchived: the launch's LMS course is a class its instructor
// archived; the launch changes nothing.
var ErrLTIClassArchived = errors.New("store: the LMS course's class is archived")

// RecordLTILaunch maps a launch onto the lab in one transaction: the
// platform user's learner (made at their first launch, named from the
// claims at every launch), the course's class (made at its first launch)
// with the learner in it — or, for an instructor or TA of the course,
// the learner marked as that class's staff, out of its figures (roles are
// per course: staff of one course is still a learner in another) — and
// the graded link, when the launch has one.
//
// An LMS identity never silently becomes a new learner: a sub unknown
// under this registration but known under another of the same issuer (the
// platform registered again with a new client id) is the same person
// (OIDC Core §2: sub is unique within its issuer), and so is the course.
// A course whose class is archived refuses the launch
// (ErrLTIClassArchived) and nothing is written.
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
	if l.ContextID != "" {
		if out.Cohort, err = ltiCohort(ctx, tx, l, ts); err != nil {
			return out, err
		}
	}
	err = tx.QueryRowContext(ctx, `SELECT learner FROM lti_users WHERE platform_id = ? AND sub = ?`, l.PlatformID, l.Sub).Scan(&out.Learner)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		// The same issuer's user under another registration (removed, or
		// registered anew with another client id).
		err = tx.QueryRowContext(ctx, `SELECT u.learner FROM lti_users u JOIN lti_platforms o ON o.id = u.platform_id
			JOIN lti_platforms p ON p.id = ? AND p.issuer = o.issuer
			WHERE u.sub = ? ORDER BY u.launched_at DESC LIMIT 1`, l.PlatformID, l.Sub).Scan(&out.Learner)
		if errors.Is(err, sql.ErrNoRows) {
			out.Learner, out.NewLearner = NewLearnerID(), true
			if _, err := tx.ExecContext(ctx, `INSERT INTO learners (id, created, display_name) VALUES (?, ?, ?)`, out.Learner, ts, name); err != nil {
				return out, fmt.Errorf("store: lti launch: %w", err)
			}
		} else if err != nil {
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
	}
	if !out.NewLearner && name != "" {
		if _, err := tx.ExecContext(ctx, `UPDATE learners SET display_name = ? WHERE id = ?`, name, out.Learner); err != nil {
			return out, fmt.Errorf("store: lti launch: %w", err)
		}
	}
	if out.Cohort > 0 && l.MembershipsURL != "" {
		if _, err := tx.ExecContext(ctx, `UPDATE lti_contexts SET memberships_url = ? WHERE platform_id = ? AND context_id = ?`,
			l.MembershipsURL, l.PlatformID, l.ContextID); err != nil {
			return out, fmt.Errorf("store: lti launch: %w", err)
		}
	}
	if out.Cohort > 0 {
		// The role is the course's, as this launch says it.
		if l.Role != "learner" {
			_, err = tx.ExecContext(ctx, `INSERT INTO cohort_staff (cohort_id, learner, role, marked_at) VALUES (?, ?, ?, ?)
				ON CONFLICT (cohort_id, learner) DO UPDATE SET role = excluded.role`, out.Cohort, out.Learner, l.Role, ts)
		} else {
			_, err = tx.ExecContext(ctx, `DELETE FROM cohort_staff WHERE cohort_id = ? AND learner = ?`, out.Cohort, out.Learner)
		}
		if err != nil {
			return out, fmt.Errorf("store: lti launch: %w", err)
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

// ltiCohort is the class of the launch's LMS course: the one linked to
// the course under this registration, else under another registration of
// the same issuer (then linked here too), else a new class named after
// the course. ErrLTIClassArchived when that class is archived. An LMS
// course's class has no join code anyone can use (OpenCohortByCode
// refuses it): its members are the course's, as the LMS launches them.
func ltiCohort(ctx context.Context, tx *sql.Tx, l LTILaunch, ts string) (int64, error) {
	var (
		id       int64
		archived sql.NullString
	)
	err := tx.QueryRowContext(ctx, `SELECT x.cohort_id, c.archived_at FROM lti_contexts x JOIN cohorts c ON c.id = x.cohort_id
		WHERE x.platform_id = ? AND x.context_id = ?`, l.PlatformID, l.ContextID).Scan(&id, &archived)
	if errors.Is(err, sql.ErrNoRows) {
		err = tx.QueryRowContext(ctx, `SELECT x.cohort_id, c.archived_at FROM lti_contexts x JOIN cohorts c ON c.id = x.cohort_id
			JOIN lti_platforms o ON o.id = x.platform_id JOIN lti_platforms p ON p.id = ? AND p.issuer = o.issuer
			WHERE x.context_id = ? ORDER BY x.cohort_id DESC LIMIT 1`, l.PlatformID, l.ContextID).Scan(&id, &archived)
		if err == nil {
			if _, err := tx.ExecContext(ctx, `INSERT INTO lti_contexts (platform_id, context_id, cohort_id) VALUES (?, ?, ?)`,
				l.PlatformID, l.ContextID, id); err != nil {
				return 0, fmt.Errorf("store: lti class: %w", err)
			}
		}
	}
	if err == nil {
		if archived.Valid {
			return id, ErrLTIClassArchived
		}
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
	Archived   bool   // that class is archived: its scores are final, nothing is sent
}

// LTIGradeLinks lists the graded links of a learner (none for a learner
// who never launched from an LMS: one indexed lookup), leaving out those
// of removed registrations (their scores wait for the platform to be
// registered again).
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
	rows, err := db.r.QueryContext(ctx, `SELECT g.platform_id, g.sub, g.line_item, g.lesson, g.question, COALESCE(g.cohort_id, 0),
		COALESCE((SELECT c.archived_at IS NOT NULL FROM cohorts c WHERE c.id = g.cohort_id), 0)
		FROM lti_users u JOIN lti_grade_links g ON g.platform_id = u.platform_id AND g.sub = u.sub
		JOIN lti_platforms p ON p.id = g.platform_id AND p.removed_at IS NULL
		WHERE u.learner = ? ORDER BY g.created_at`, learner)
	if err != nil {
		return nil, fmt.Errorf("store: grade links: %w", err)
	}
	defer rows.Close()
	var out []LTIGradeLink
	for rows.Next() {
		var g LTIGradeLink
		if err := rows.Scan(&g.PlatformID, &g.Sub, &g.LineItem, &g.Lesson, &g.Question, &g.Cohort, &g.Archived); err != nil {
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

// DueScores implements lti.Outbox; the scores of a removed registration
// wait for it to be registered again.
func (db *DB) DueScores(ctx context.Context, at time.Time, max int) ([]lti.PendingScore, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT o.id, o.platform_id, o.line_item, o.score, o.attempts, o.version FROM lti_outbox o
		WHERE o.next_at <= ? AND NOT EXISTS (SELECT 1 FROM lti_platforms p WHERE p.id = o.platform_id AND p.removed_at IS NOT NULL)
		ORDER BY o.next_at, o.id LIMIT ?`, formatTime(at), max)
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

// LTIGradedLearners lists the learners with a graded link in class cohort
// (to lesson, or to any lesson when lesson is ""): whose LMS scores a
// change of the class's settings, or the instructor's "send again", must
// queue again.
func (db *DB) LTIGradedLearners(ctx context.Context, cohort int64, lesson string) ([]string, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT DISTINCT u.learner FROM lti_grade_links g
		JOIN lti_users u ON u.platform_id = g.platform_id AND u.sub = g.sub
		WHERE g.cohort_id = ?1 AND (?2 = '' OR g.lesson = ?2) ORDER BY u.learner`, cohort, lesson)
	return collect("graded learners", rows, err, func(sc scanner) (string, error) {
		var id string
		return id, sc.Scan(&id)
	})
}

// IsLTIClass reports whether the class is an LMS course's.
func (db *DB) IsLTIClass(ctx context.Context, cohort int64) (bool, error) {
	var n int
	if err := db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM lti_contexts WHERE cohort_id = ?`, cohort).Scan(&n); err != nil {
		return false, fmt.Errorf("store: lti class: %w", err)
	}
	return n > 0, nil
}

// IsLTILearner reports whether the learner is a platform user's (their
// name is the LMS's: SetDisplayName refuses it).
func (db *DB) IsLTILearner(ctx context.Context, learner string) (bool, error) {
	var n int
	if err := db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM lti_users WHERE learner = ?`, learner).Scan(&n); err != nil {
		return false, fmt.Errorf("store: lti learner: %w", err)
	}
	return n > 0, nil
}

// LTIIdentity is a learner's LMS identity as exports show it: the
// platform's user id (sub) and email of their latest launch.
type LTIIdentity struct {
	Issuer, Sub, Email string
}

// LTIIdentities returns the LMS identity of every learner who launched
// from an LMS, by learner id (their latest launch's, when they came from
// two registrations).
func (db *DB) LTIIdentities(ctx context.Context) (map[string]LTIIdentity, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT u.learner, p.issuer, u.sub, u.email FROM lti_users u
		JOIN lti_platforms p ON p.id = u.platform_id ORDER BY u.launched_at`)
	if err != nil {
		return nil, fmt.Errorf("store: lti identities: %w", err)
	}
	defer rows.Close()
	out := map[string]LTIIdentity{}
	for rows.Next() {
		var (
			learner string
			id      LTIIdentity
		)
		if err := rows.Scan(&learner, &id.Issuer, &id.Sub, &id.Email); err != nil {
			return nil, fmt.Errorf("store: lti identities: %w", err)
		}
		out[learner] = id // the latest launch last
	}
	return out, rows.Err()
}

// LTIRosterSource is where class cohort's LMS roster is read: the course's
// registration and memberships URL (ok false when the class is no LMS
// course, or no launch offered the service).
type LTIRosterSource struct {
	PlatformID     int64
	ContextID      string
	MembershipsURL string
	SyncedAt       time.Time // zero: never synced
}

// LTIRosterSourceOf returns the roster source of class cohort.
func (db *DB) LTIRosterSourceOf(ctx context.Context, cohort int64) (LTIRosterSource, bool, error) {
	var (
		src    LTIRosterSource
		synced sql.NullString
	)
	err := db.r.QueryRowContext(ctx, `SELECT x.platform_id, x.context_id, x.memberships_url, x.roster_synced_at
		FROM lti_contexts x JOIN lti_platforms p ON p.id = x.platform_id AND p.removed_at IS NULL
		WHERE x.cohort_id = ? AND x.memberships_url != '' ORDER BY x.platform_id DESC LIMIT 1`, cohort).
		Scan(&src.PlatformID, &src.ContextID, &src.MembershipsURL, &synced)
	if errors.Is(err, sql.ErrNoRows) {
		return src, false, nil
	}
	if err != nil {
		return src, false, fmt.Errorf("store: lti roster: %w", err)
	}
	if synced.Valid {
		src.SyncedAt, _ = parseTime(synced.String)
	}
	return src, true, nil
}

// LTIRosterMember is one membership as the LMS sent it.
type LTIRosterMember struct {
	Sub, Name, Email string
	Role             string // learner, ta or instructor
	Active           bool
}

// SyncLTIRoster replaces the roster of src's course with members (what
// the LMS holds now) in one transaction.
func (db *DB) SyncLTIRoster(ctx context.Context, src LTIRosterSource, members []LTIRosterMember) error {
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: lti roster: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `DELETE FROM lti_roster WHERE platform_id = ? AND context_id = ?`, src.PlatformID, src.ContextID); err != nil {
		return fmt.Errorf("store: lti roster: %w", err)
	}
	for _, m := range members {
		if _, err := tx.ExecContext(ctx, `INSERT INTO lti_roster (platform_id, context_id, sub, name, email, role, active)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET name = excluded.name, email = excluded.email,
			role = excluded.role, active = excluded.active`,
			src.PlatformID, src.ContextID, m.Sub, cleanName(m.Name, MaxDisplayName), m.Email, m.Role, m.Active); err != nil {
			return fmt.Errorf("store: lti roster: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE lti_contexts SET roster_synced_at = ? WHERE platform_id = ? AND context_id = ?`,
		now(), src.PlatformID, src.ContextID); err != nil {
		return fmt.Errorf("store: lti roster: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: lti roster: %w", err)
	}
	return nil
}

// LTIRosterRow is one person of an LMS course's class: enrolled in the
// LMS, in the lab, or both.
type LTIRosterRow struct {
	Sub, Name, Email, Role string
	// Status: "launched" (enrolled and in the lab), "never" (enrolled,
	// never launched), "dropped" (in the lab; inactive in the LMS or no
	// longer enrolled).
	Status  string
	Learner string // the lab's learner ("" for one who never launched)
}

// LTIRoster lists class cohort's roster against the lab's members, by
// status (dropped, never launched, launched), then name: from the last
// sync of src.
func (db *DB) LTIRoster(ctx context.Context, cohort int64, src LTIRosterSource) ([]LTIRosterRow, error) {
	rows, err := db.r.QueryContext(ctx, `
		SELECT r.sub, r.name, r.email, r.role,
		       CASE WHEN NOT r.active AND u.learner IS NOT NULL THEN 'dropped'
		            WHEN u.learner IS NULL THEN 'never' ELSE 'launched' END,
		       COALESCE(u.learner, '')
		FROM lti_roster r
		LEFT JOIN lti_users u ON u.platform_id = r.platform_id AND u.sub = r.sub
		     AND (EXISTS (SELECT 1 FROM cohort_members m WHERE m.cohort_id = ?1 AND m.learner = u.learner)
		          OR EXISTS (SELECT 1 FROM cohort_staff cs WHERE cs.cohort_id = ?1 AND cs.learner = u.learner))
		WHERE r.platform_id = ?2 AND r.context_id = ?3 AND (r.active OR u.learner IS NOT NULL)
		UNION ALL
		SELECT u.sub, l.display_name, u.email, 'learner', 'dropped', m.learner
		FROM cohort_members m JOIN learners l ON l.id = m.learner
		JOIN lti_users u ON u.learner = m.learner AND u.platform_id = ?2
		WHERE m.cohort_id = ?1 AND NOT EXISTS (SELECT 1 FROM lti_roster r WHERE r.platform_id = ?2 AND r.context_id = ?3 AND r.sub = u.sub)`,
		cohort, src.PlatformID, src.ContextID)
	out, err := collect("lti roster", rows, err, func(sc scanner) (LTIRosterRow, error) {
		var r LTIRosterRow
		return r, sc.Scan(&r.Sub, &r.Name, &r.Email, &r.Role, &r.Status, &r.Learner)
	})
	rank := map[string]int{"dropped": 0, "never": 1, "launched": 2}
	slices.SortStableFunc(out, func(a, b LTIRosterRow) int {
		return cmp.Or(cmp.Compare(rank[a.Status], rank[b.Status]), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Sub, b.Sub))
	})
	return out, err
}
