-- 0003: experiment runs and every event each one emitted, so a run page
-- replays exactly what was streamed. The runs row is a summary kept up to
-- date from the events (status, backend, verdict, error, times).
CREATE TABLE runs (
    id          TEXT PRIMARY KEY,
    learner     TEXT NOT NULL REFERENCES learners(id) ON DELETE CASCADE,
    experiment  TEXT NOT NULL,
    params      TEXT NOT NULL CHECK (json_valid(params)),
    status      TEXT NOT NULL,
    backend     TEXT NOT NULL DEFAULT '',
    result      TEXT CHECK (result IS NULL OR json_valid(result)), -- the result event
    error       TEXT NOT NULL DEFAULT '',                          -- why it failed
    created_at  TEXT NOT NULL,
    started_at  TEXT,
    finished_at TEXT
);
-- A learner's history, newest first.
CREATE INDEX runs_learner ON runs(learner, created_at);
-- Runs left unfinished by a stopped server, found at startup.
CREATE INDEX runs_active ON runs(status) WHERE status IN ('queued', 'running');

CREATE TABLE run_events (
    run_id TEXT    NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq    INTEGER NOT NULL,
    type   TEXT    NOT NULL,
    data   TEXT    NOT NULL CHECK (json_valid(data)), -- the sandbox.Event as JSON
    time   TEXT    NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
