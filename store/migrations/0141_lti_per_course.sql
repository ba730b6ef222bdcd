-- 0141: LTI mapping that survives the LMS (issue 41).
--
-- A platform removed by the admin is kept, marked removed_at: its users'
-- and courses' links stay, so registering the same issuer and client id
-- again reconnects every learner to their own work (the old removal
-- cascaded lti_users, lti_contexts and lti_grade_links away, and the next
-- launch made an empty learner whose score overwrote the LMS grade).
ALTER TABLE lti_platforms ADD COLUMN removed_at TEXT;

-- Roles are per course (LTI Core §5.3.7: context roles): a launch as
-- Instructor or TA of an LMS course makes the user staff of that
-- course's class only, out of its figures, and leaves their work as a
-- learner in other courses counted. staff_learners stays for the lab's
-- own instructors' browsers (staff everywhere).
CREATE TABLE cohort_staff (
    cohort_id INTEGER NOT NULL REFERENCES cohorts(id) ON DELETE CASCADE,
    learner   TEXT    NOT NULL REFERENCES learners(id) ON DELETE CASCADE,
    role      TEXT    NOT NULL CHECK (role IN ('ta', 'instructor')),
    marked_at TEXT    NOT NULL,
    PRIMARY KEY (cohort_id, learner)
);
CREATE INDEX cohort_staff_learner ON cohort_staff(learner);

-- The marks LTI launches made before this migration were global: each
-- becomes a mark in the platform's course classes the user is not a
-- learner of (a launch as a learner there takes it off again).
INSERT OR IGNORE INTO cohort_staff (cohort_id, learner, role, marked_at)
SELECT x.cohort_id, u.learner, CASE WHEN u.role = 'ta' THEN 'ta' ELSE 'instructor' END, s.marked_at
FROM staff_learners s
JOIN lti_users u ON u.learner = s.learner
JOIN lti_contexts x ON x.platform_id = u.platform_id
WHERE s.instructor_id IS NULL
  AND NOT EXISTS (SELECT 1 FROM cohort_members m WHERE m.cohort_id = x.cohort_id AND m.learner = u.learner);
DELETE FROM staff_learners WHERE instructor_id IS NULL AND learner IN (SELECT learner FROM lti_users);

-- A login state is kept, marked used, until it expires, so a launch that
-- repeats it is told "used already" and one that invents it "unknown".
ALTER TABLE lti_login_states ADD COLUMN used_at TEXT;

-- When the scores of a graded lesson's class were queued at its close
-- (Completed), so the close is sent once; a new close date clears it.
ALTER TABLE graded_lessons ADD COLUMN close_sent_at TEXT;
