-- What a learner did on a lesson's :::program exercise besides runs
-- (issue 40):
--   program_hints: each hint revealed, one row per hint, in order (hint 0
--   first), with when: the gradebook counts them;
--   program_submissions: the source of the learner's last Run and its run,
--   so an instructor can open what was last submitted;
--   program_resets: the code the learner's last "reset to starter"
--   replaced, so a reset is never the end of their work.
CREATE TABLE program_hints (
    learner     TEXT NOT NULL REFERENCES learners(id) ON DELETE CASCADE,
    lesson      TEXT NOT NULL,
    program     TEXT NOT NULL,
    hint        INTEGER NOT NULL,
    revealed_at TEXT NOT NULL,
    PRIMARY KEY (learner, lesson, program, hint)
);

CREATE TABLE program_submissions (
    learner      TEXT NOT NULL REFERENCES learners(id) ON DELETE CASCADE,
    lesson       TEXT NOT NULL,
    program      TEXT NOT NULL,
    run_id       TEXT NOT NULL,
    source       TEXT NOT NULL,
    submitted_at TEXT NOT NULL,
    PRIMARY KEY (learner, lesson, program)
);

CREATE TABLE program_resets (
    learner  TEXT NOT NULL REFERENCES learners(id) ON DELETE CASCADE,
    lesson   TEXT NOT NULL,
    program  TEXT NOT NULL,
    source   TEXT NOT NULL,
    reset_at TEXT NOT NULL,
    PRIMARY KEY (learner, lesson, program)
);
