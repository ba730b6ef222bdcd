-- 0091: roles (issue 29 item 7). An account is an instructor (everything)
-- or a TA: a TA sees the classes assigned to them (cohort_tas) — their
-- dashboard, gradebook, exports, roster and the answer key — and changes
-- nothing but their own password. An invitation carries the role it
-- grants and, for a TA, the class they join; it records who made it, so
-- pending invitations can be listed and revoked (by rowid).
ALTER TABLE instructors ADD COLUMN role TEXT NOT NULL DEFAULT 'instructor' CHECK (role IN ('instructor', 'ta'));
ALTER TABLE instructor_invites ADD COLUMN role TEXT NOT NULL DEFAULT 'instructor' CHECK (role IN ('instructor', 'ta'));
ALTER TABLE instructor_invites ADD COLUMN cohort_id INTEGER REFERENCES cohorts(id) ON DELETE CASCADE;

CREATE TABLE cohort_tas (
    cohort_id     INTEGER NOT NULL REFERENCES cohorts(id) ON DELETE CASCADE,
    instructor_id INTEGER NOT NULL REFERENCES instructors(id) ON DELETE CASCADE,
    PRIMARY KEY (cohort_id, instructor_id)
);
