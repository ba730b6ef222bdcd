-- 0090: class rosters (issue 29 item 4). An instructor imports a roster
-- (school student id and name) into a class; each entry (a seat) gets a
-- personal code. A learner claims the seat with the class's join code plus
-- the personal code: from then on the seat's learner id is that student's,
-- their name comes from the roster (nobody else can take it), and the same
-- two codes on a second device sign that device in as the same learner.
-- learner is NULL until the seat is claimed.
CREATE TABLE roster_seats (
    id          INTEGER PRIMARY KEY,
    cohort_id   INTEGER NOT NULL REFERENCES cohorts(id) ON DELETE CASCADE,
    student_id  TEXT    NOT NULL,
    name        TEXT    NOT NULL,
    code        TEXT    NOT NULL,
    learner     TEXT    REFERENCES learners(id) ON DELETE SET NULL,
    created_at  TEXT    NOT NULL,
    claimed_at  TEXT,
    claims      INTEGER NOT NULL DEFAULT 0, -- devices signed in with the codes
    UNIQUE (cohort_id, student_id),
    UNIQUE (cohort_id, code)
);
CREATE INDEX roster_seats_learner ON roster_seats(learner);
