-- task_progress: a learner's checks of a lesson's :::task steps (issue 20).
-- One row per learner, lesson and task: how many times they pressed Check,
-- when last, and when a check first passed (NULL until one did).
CREATE TABLE task_progress (
    learner  TEXT NOT NULL REFERENCES learners(id) ON DELETE CASCADE,
    lesson   TEXT NOT NULL,
    task     TEXT NOT NULL,
    checks   INTEGER NOT NULL DEFAULT 0,
    last_at  TEXT NOT NULL,
    done_at  TEXT,
    PRIMARY KEY (learner, lesson, task)
);
