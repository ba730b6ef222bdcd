-- Learners are anonymous: the id lives in the lab_learner cookie.
-- (display_name is added by 0004_instructors.sql.)
CREATE TABLE learners (
    id      TEXT PRIMARY KEY,
    created TEXT NOT NULL
);

-- progress is one row per learner and lesson, created when the lesson is first opened.
CREATE TABLE progress (
    learner      TEXT NOT NULL REFERENCES learners(id) ON DELETE CASCADE,
    lesson       TEXT NOT NULL,
    opened_at    TEXT NOT NULL,
    completed_at TEXT,
    PRIMARY KEY (learner, lesson)
);
