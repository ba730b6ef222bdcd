-- 0002: every quiz submission is kept (retries included), so the page can
-- show a learner's best and latest answer and instructors get statistics.
-- answer is the JSON form of quiz.Answer for the question's type
-- ("id", ["id", ...] or a number); correct is as graded at submission.
CREATE TABLE attempts (
    id          INTEGER PRIMARY KEY,
    learner     TEXT    NOT NULL REFERENCES learners(id) ON DELETE CASCADE,
    question_id TEXT    NOT NULL,
    answer      TEXT    NOT NULL CHECK (json_valid(answer)),
    correct     INTEGER NOT NULL CHECK (correct IN (0, 1)),
    created_at  TEXT    NOT NULL
);
-- A learner's attempts per question (lesson pages, home scores).
CREATE INDEX attempts_learner_question ON attempts(learner, question_id, id);
-- All attempts at a question in time order (statistics).
CREATE INDEX attempts_question ON attempts(question_id, id);
