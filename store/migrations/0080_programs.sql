-- program_code / program_progress: a learner's code and record on a
-- lesson's :::program exercises (issue 25). The code is saved as they type
-- (one row per learner, lesson and program); the progress row counts runs
-- that reached the check, passes, and when the solution was shown.
CREATE TABLE program_code (
    learner  TEXT NOT NULL REFERENCES learners(id) ON DELETE CASCADE,
    lesson   TEXT NOT NULL,
    program  TEXT NOT NULL,
    source   TEXT NOT NULL,
    saved_at TEXT NOT NULL,
    PRIMARY KEY (learner, lesson, program)
);

CREATE TABLE program_progress (
    learner         TEXT NOT NULL REFERENCES learners(id) ON DELETE CASCADE,
    lesson          TEXT NOT NULL,
    program         TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    passes          INTEGER NOT NULL DEFAULT 0,
    last_at         TEXT NOT NULL,
    passed_at       TEXT,
    solution_at     TEXT,
    PRIMARY KEY (learner, lesson, program)
);
