-- 0005: server secrets, created at first use and kept with the data they
-- protect (the learner-cookie HMAC key: a restored backup keeps its
-- learners signed in; a fresh database starts with a fresh key).
CREATE TABLE secrets (
    name       TEXT PRIMARY KEY,
    value      BLOB NOT NULL,
    created_at TEXT NOT NULL
);
