-- The login throttle counts failures per account across addresses
-- (web/instructor_auth.go): index them by username.
CREATE INDEX login_attempts_user ON login_attempts(username, at);
