-- 0142: each account's username skeleton (store.usernameSkeleton: case
-- folded, then the UTS #39 confusable skeleton), unique, so that no two
-- accounts made from now on look alike — also two made at the same time,
-- past the check in Go (issue 43 fall 7: "Kelly" with a Kelvin sign sat
-- beside "Kelly", the NOCASE index folds ASCII only). Accounts made
-- before it keep NULL here (SQLite lets NULLs repeat in a unique index);
-- the check in Go still compares a new name against every one of them.
ALTER TABLE instructors ADD COLUMN username_skeleton TEXT;
CREATE UNIQUE INDEX instructors_username_skeleton ON instructors (username_skeleton);
