-- 0140: one invitation mechanism. The first-start setup link was a second
-- one-time token (setup_tokens) beside the invitations, written and
-- redeemed by code of its own; it is now an invitation like the others,
-- marked first_account: no creator, valid only while no instructor exists,
-- and a new one replaces the last (a restart prints a new link).
ALTER TABLE instructor_invites ADD COLUMN first_account INTEGER NOT NULL DEFAULT 0 CHECK (first_account IN (0, 1));
INSERT INTO instructor_invites (token_hash, created_by, created_at, expires_at, role, first_account)
    SELECT token_hash, NULL, expires_at, expires_at, 'instructor', 1 FROM setup_tokens;
DROP TABLE setup_tokens;
