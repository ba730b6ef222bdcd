-- 0152: opt-in class leaderboards of a program exercise's figure (issue
-- 40; lesson 06's write-rate ratio). A learner appears on the board of a
-- class they belong to only after choosing to (a row here); leaving
-- deletes the row. number is the learner's anonymous label on that board
-- ("Learner 7"), given at their first opt-in and never reused within the
-- board; show_name 1 shows their display name instead. The figures are
-- never stored here: they are read from the learner's checked runs
-- (runs.result), as the check reported them.
CREATE TABLE leaderboard_entries (
    cohort_id INTEGER NOT NULL REFERENCES cohorts(id) ON DELETE CASCADE,
    lesson    TEXT    NOT NULL,
    program   TEXT    NOT NULL,
    learner   TEXT    NOT NULL REFERENCES learners(id) ON DELETE CASCADE,
    number    INTEGER NOT NULL CHECK (number > 0),
    show_name INTEGER NOT NULL DEFAULT 0 CHECK (show_name IN (0, 1)),
    joined_at TEXT    NOT NULL,
    PRIMARY KEY (cohort_id, lesson, program, learner),
    UNIQUE (cohort_id, lesson, program, number)
);
CREATE INDEX leaderboard_entries_learner ON leaderboard_entries(learner);

-- The highest anonymous number a board has given, so a learner who leaves
-- and another who joins never share a label.
CREATE TABLE leaderboard_numbers (
    cohort_id INTEGER NOT NULL REFERENCES cohorts(id) ON DELETE CASCADE,
    lesson    TEXT    NOT NULL,
    program   TEXT    NOT NULL,
    last      INTEGER NOT NULL,
    PRIMARY KEY (cohort_id, lesson, program)
);
