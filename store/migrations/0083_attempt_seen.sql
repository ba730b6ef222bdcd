-- 0083: an attempt made while the question's answer was on the learner's
-- screen ("show answer", or shown by itself after the lesson's number of
-- wrong tries) is kept with seen = 1. quiz.Policy decides it once, when the
-- attempt is graded; a seen attempt is never a clean success: scores, the
-- gradebook, the home page and class statistics leave it out, and both CSV
-- exports flag it (issue 29 item 5, issue 30 item 9).
ALTER TABLE attempts ADD COLUMN seen INTEGER NOT NULL DEFAULT 0;
