-- 0010: what a learner did at a question besides answering it: "reveal"
-- (chose "show answer") and "format" (a numeric answer the server could
-- not read; detail holds the text, clipped). Kept apart from attempts so
-- grading and statistics of answers are unchanged; instructors see these
-- as counts per question.
CREATE TABLE quiz_events (
    id          INTEGER PRIMARY KEY,
    learner     TEXT    NOT NULL REFERENCES learners(id) ON DELETE CASCADE,
    question_id TEXT    NOT NULL,
    kind        TEXT    NOT NULL CHECK (kind IN ('reveal', 'format')),
    detail      TEXT    NOT NULL DEFAULT '',
    created_at  TEXT    NOT NULL
);
CREATE INDEX quiz_events_learner ON quiz_events(learner, question_id);
CREATE INDEX quiz_events_question ON quiz_events(question_id, kind);
