-- 0143: the LMS course's roster (issue 41, Names and Role Provisioning
-- Services). A launch that offers NRPS records the course's memberships
-- URL; a sync (the instructor's button) replaces the course's roster rows
-- with what the LMS says: each member's sub, name, email, role in the
-- course (learner, ta, instructor) and whether the membership is active.
ALTER TABLE lti_contexts ADD COLUMN memberships_url TEXT NOT NULL DEFAULT '';
ALTER TABLE lti_contexts ADD COLUMN roster_synced_at TEXT;

CREATE TABLE lti_roster (
    platform_id INTEGER NOT NULL,
    context_id  TEXT    NOT NULL,
    sub         TEXT    NOT NULL,
    name        TEXT    NOT NULL DEFAULT '',
    email       TEXT    NOT NULL DEFAULT '',
    role        TEXT    NOT NULL CHECK (role IN ('learner', 'ta', 'instructor')),
    active      INTEGER NOT NULL,
    PRIMARY KEY (platform_id, context_id, sub),
    FOREIGN KEY (platform_id, context_id) REFERENCES lti_contexts(platform_id, context_id) ON DELETE CASCADE
);
