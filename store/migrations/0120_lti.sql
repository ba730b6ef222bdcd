-- 0120: LTI 1.3 (issue 29). The lab as a tool of a school's LMS.
-- lti_platforms: what the admin registered (`labserver lti add`); a
-- platform is its issuer plus the client id it gave us. Deployment ids
-- accepted from it are rows of lti_deployments.
CREATE TABLE lti_platforms (
    id            INTEGER PRIMARY KEY,
    issuer        TEXT NOT NULL,
    client_id     TEXT NOT NULL,
    auth_url      TEXT NOT NULL,
    token_url     TEXT NOT NULL,
    jwks_url      TEXT NOT NULL,
    frame_origins TEXT NOT NULL DEFAULT '', -- space-separated extra origins allowed to frame the lab
    created_at    TEXT NOT NULL,
    UNIQUE (issuer, client_id)
);

CREATE TABLE lti_deployments (
    platform_id   INTEGER NOT NULL REFERENCES lti_platforms(id) ON DELETE CASCADE,
    deployment_id TEXT    NOT NULL,
    PRIMARY KEY (platform_id, deployment_id)
);

-- A login initiation's state and nonce, until the launch takes it (single
-- use) or it expires; a launch's nonce, until its token expires (replay).
CREATE TABLE lti_login_states (
    state       TEXT PRIMARY KEY,
    nonce       TEXT    NOT NULL,
    platform_id INTEGER NOT NULL REFERENCES lti_platforms(id) ON DELETE CASCADE,
    expires_at  TEXT    NOT NULL
);
CREATE INDEX lti_login_states_expires ON lti_login_states(expires_at);

CREATE TABLE lti_nonces (
    platform_id INTEGER NOT NULL REFERENCES lti_platforms(id) ON DELETE CASCADE,
    nonce       TEXT    NOT NULL,
    expires_at  TEXT    NOT NULL,
    PRIMARY KEY (platform_id, nonce)
);
CREATE INDEX lti_nonces_expires ON lti_nonces(expires_at);

-- A platform user (its sub) is one learner of the lab, whatever browser
-- they launch from; name and email as the last launch said; role the last
-- launch's (learner, ta, instructor).
CREATE TABLE lti_users (
    platform_id INTEGER NOT NULL REFERENCES lti_platforms(id) ON DELETE CASCADE,
    sub         TEXT    NOT NULL,
    learner     TEXT    NOT NULL REFERENCES learners(id) ON DELETE CASCADE,
    name        TEXT    NOT NULL DEFAULT '',
    email       TEXT    NOT NULL DEFAULT '',
    role        TEXT    NOT NULL DEFAULT 'learner',
    created_at  TEXT    NOT NULL,
    launched_at TEXT    NOT NULL,
    PRIMARY KEY (platform_id, sub)
);
CREATE INDEX lti_users_learner ON lti_users(learner);

-- An LMS course (context) is a class of the lab, made at its first launch.
CREATE TABLE lti_contexts (
    platform_id INTEGER NOT NULL REFERENCES lti_platforms(id) ON DELETE CASCADE,
    context_id  TEXT    NOT NULL,
    cohort_id   INTEGER NOT NULL REFERENCES cohorts(id) ON DELETE CASCADE,
    PRIMARY KEY (platform_id, context_id)
);

-- Where a user's scores go: a launch of a graded link (one with an AGS
-- line item and the score scope) records the line item and what it
-- grades: a lesson, or one question of it.
CREATE TABLE lti_grade_links (
    platform_id INTEGER NOT NULL,
    sub         TEXT    NOT NULL,
    line_item   TEXT    NOT NULL,
    lesson      TEXT    NOT NULL,
    question    TEXT    NOT NULL DEFAULT '',
    created_at  TEXT    NOT NULL,
    PRIMARY KEY (platform_id, sub, line_item),
    FOREIGN KEY (platform_id, sub) REFERENCES lti_users(platform_id, sub) ON DELETE CASCADE
);

-- Scores waiting for their platform: one row per (line item, user), the
-- newest score replacing an undelivered older one; deleted once delivered.
CREATE TABLE lti_outbox (
    id          INTEGER PRIMARY KEY,
    platform_id INTEGER NOT NULL REFERENCES lti_platforms(id) ON DELETE CASCADE,
    line_item   TEXT    NOT NULL,
    sub         TEXT    NOT NULL,
    score       TEXT    NOT NULL, -- the AGS score JSON
    version     INTEGER NOT NULL DEFAULT 1, -- +1 each time a newer score replaces it
    attempts    INTEGER NOT NULL DEFAULT 0,
    next_at     TEXT    NOT NULL,
    last_error  TEXT    NOT NULL DEFAULT '',
    last_try_at TEXT,
    created_at  TEXT    NOT NULL,
    UNIQUE (platform_id, line_item, sub)
);
CREATE INDEX lti_outbox_next ON lti_outbox(next_at);
