-- 0153: an instructor hides their class's leaderboards (issue 40): its
-- learners then see none of them, and joining one is refused.
ALTER TABLE cohorts ADD COLUMN leaderboard_hidden INTEGER NOT NULL DEFAULT 0 CHECK (leaderboard_hidden IN (0, 1));
