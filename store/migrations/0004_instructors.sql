-- 0004: instructor accounts, their server-side sessions, login attempts (for
-- the rate limit), the one-time setup token, and learners' display names.
-- Times are TEXT in the store's fixed-width RFC 3339 UTC form, so string
-- order is time order.

CREATE TABLE instructors (
    id            INTEGER PRIMARY KEY,
    username      TEXT NOT NULL UNIQUE COLLATE NOCASE,
    password_hash TEXT NOT NULL,            -- bcrypt
    created_at    TEXT NOT NULL
);

-- Only a SHA-256 of each session token is stored, so a copy of the database
-- does not hand out live sessions.
CREATE TABLE instructor_sessions (
    token_hash    TEXT PRIMARY KEY,
    instructor_id INTEGER NOT NULL REFERENCES instructors(id) ON DELETE CASCADE,
    created_at    TEXT NOT NULL,
    expires_at    TEXT NOT NULL
);
CREATE INDEX instructor_sessions_expires ON instructor_sessions(expires_at);

CREATE TABLE login_attempts (
    id       INTEGER PRIMARY KEY,
    ip       TEXT    NOT NULL,
    username TEXT    NOT NULL COLLATE NOCASE,
    ok       INTEGER NOT NULL CHECK (ok IN (0, 1)),
    at       TEXT    NOT NULL
);
CREATE INDEX login_attempts_key ON login_attempts(ip, username, at);
CREATE INDEX login_attempts_ip ON login_attempts(ip, at);

-- The first-start setup link: valid once, until it expires; only while no
-- instructor exists.
CREATE TABLE setup_tokens (
    token_hash TEXT PRIMARY KEY,
    expires_at TEXT NOT NULL
);

-- Shown to instructors only; learners stay anonymous to each other.
ALTER TABLE learners ADD COLUMN display_name TEXT NOT NULL DEFAULT '';
