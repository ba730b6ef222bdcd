-- 0060: invitations for more instructors. An instructor creates a one-time,
-- expiring link; whoever opens it chooses a username and password. Only a
-- SHA-256 of the token is stored (like sessions).
CREATE TABLE instructor_invites (
    token_hash TEXT PRIMARY KEY,
    created_by INTEGER REFERENCES instructors(id) ON DELETE SET NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL
);
