-- 0121: a graded link remembers the class of the launch that recorded it
-- (the LMS course), so the score sent is that class's gradebook figure
-- (graded mode, terms). NULL: a launch without a course.
ALTER TABLE lti_grade_links ADD COLUMN cohort_id INTEGER REFERENCES cohorts(id) ON DELETE SET NULL;
