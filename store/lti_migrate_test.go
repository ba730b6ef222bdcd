package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

// TestMigrationStaffPerCourse (issue 41): a database made before 0141,
// where an LTI instructor's launch marked them staff everywhere, comes
// out with the mark on the platform's courses they are no learner of,
// and counted as a learner where they are one.
func TestMigrationStaffPerCourse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lab.db")
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(1)")
	if err != nil {
		t.Fatal(err)
	}
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Version >= 141 {
			break
		}
		if _, err := raw.Exec(m.SQL); err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		raw.Exec(`INSERT INTO schema_migrations VALUES (?, ?, '2026-01-01T00:00:00Z')`, m.Version, m.Name)
	}
	ts := "2026-01-01T00:00:00.000000000Z"
	for _, q := range []string{
		`INSERT INTO learners (id, created) VALUES ('aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', '` + ts + `')`,
		`INSERT INTO lti_platforms (id, issuer, client_id, auth_url, token_url, jwks_url, created_at) VALUES (1, 'https://lms.example', 'c', 'a', 't', 'j', '` + ts + `')`,
		`INSERT INTO lti_users (platform_id, sub, learner, role, created_at, launched_at) VALUES (1, 'ta-1', 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', 'ta', '` + ts + `', '` + ts + `')`,
		`INSERT INTO cohorts (id, name, code, created_at) VALUES (1, 'A', 'AAAAAAAA', '` + ts + `'), (2, 'B', 'BBBBBBBB', '` + ts + `')`,
		`INSERT INTO lti_contexts (platform_id, context_id, cohort_id) VALUES (1, 'course-A', 1), (1, 'course-B', 2)`,
		`INSERT INTO cohort_members (cohort_id, learner, joined_at) VALUES (2, 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', '` + ts + `')`,
		`INSERT INTO staff_learners (learner, marked_at) VALUES ('aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', '` + ts + `')`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	raw.Close()
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var staffA, staffB, global int
	db.r.db.QueryRow(`SELECT (SELECT COUNT(*) FROM cohort_staff WHERE cohort_id = 1 AND role = 'ta'),
		(SELECT COUNT(*) FROM cohort_staff WHERE cohort_id = 2), (SELECT COUNT(*) FROM staff_learners)`).Scan(&staffA, &staffB, &global)
	if staffA != 1 || staffB != 0 || global != 0 {
		t.Errorf("after 0141: TA of A %d, staff of B %d, global marks %d; want 1, 0, 0", staffA, staffB, global)
	}
	b, err := db.Cohort(context.Background(), 2)
	if err != nil || b.Members != 1 {
		t.Errorf("class B counts %d (%v), want its learner", b.Members, err)
	}
}
