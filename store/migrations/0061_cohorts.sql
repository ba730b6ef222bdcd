-- 0061: classes (cohorts). An instructor creates a class with a join code;
-- learners who join are members. Archiving a class (archived_at) keeps its
-- data but takes its learners out of the "all learners" view and stops the
-- join code: a new term starts without deleting the database.
CREATE TABLE cohorts (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    code        TEXT NOT NULL UNIQUE,
    created_by  INTEGER REFERENCES instructors(id) ON DELETE SET NULL,
    created_at  TEXT NOT NULL,
    archived_at TEXT
);

CREATE TABLE cohort_members (
    cohort_id INTEGER NOT NULL REFERENCES cohorts(id) ON DELETE CASCADE,
    learner   TEXT    NOT NULL REFERENCES learners(id) ON DELETE CASCADE,
    joined_at TEXT    NOT NULL,
    PRIMARY KEY (cohort_id, learner)
);
CREATE INDEX cohort_members_learner ON cohort_members(learner);

-- Learner ids (browser cookies) an instructor has used: their visits,
-- answers and runs never count in class statistics.
CREATE TABLE staff_learners (
    learner       TEXT PRIMARY KEY,
    instructor_id INTEGER REFERENCES instructors(id) ON DELETE SET NULL,
    marked_at     TEXT NOT NULL
);
