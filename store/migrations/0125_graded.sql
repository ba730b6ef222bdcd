-- 0125: graded mode (issue 29). A class has a time zone its instructor
-- chooses (IANA name): graded lessons' dates are entered and shown in it.
-- graded_lessons makes one lesson graded work in one class: answers taken
-- from opens_at until closes_at (RFC 3339 UTC, as every time here), at most
-- attempt_limit per question, and counts says which answer counts (first,
-- last, best). A lesson without a row is practice, as before.
ALTER TABLE cohorts ADD COLUMN time_zone TEXT NOT NULL DEFAULT 'UTC';

CREATE TABLE graded_lessons (
    cohort_id     INTEGER NOT NULL REFERENCES cohorts(id) ON DELETE CASCADE,
    lesson        TEXT    NOT NULL,
    opens_at      TEXT    NOT NULL,
    closes_at     TEXT    NOT NULL,
    attempt_limit INTEGER NOT NULL CHECK (attempt_limit BETWEEN 1 AND 20),
    counts        TEXT    NOT NULL CHECK (counts IN ('first', 'last', 'best')),
    set_by        INTEGER REFERENCES instructors(id) ON DELETE SET NULL,
    set_at        TEXT    NOT NULL,
    PRIMARY KEY (cohort_id, lesson),
    CHECK (opens_at < closes_at)
);
