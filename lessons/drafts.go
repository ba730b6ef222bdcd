package lessons

import (
	"io/fs"

	"github.com/rdmalab/rdmalab/quiz"
)

// Drafts: lesson folders inside <course>/_drafts/ (same layout as the
// course: _drafts/06-foo/index.zh.md …) load beside the course on every
// load as a course of their own, Course.Drafts. Instructors preview them
// at DraftsPath+slug; learners never see them (they are not in
// Course.Lessons, so no list, link, search, progress or statistic of the
// course includes them). A draft may require and link to the course's
// lessons; its slug and its question ids must differ from the course's.

// DraftsDir is the folder of drafts inside the course folder.
const DraftsDir = "_drafts"

// DraftsPath is where the server previews drafts (instructors only):
// DraftsPath+slug is a draft's page, DraftsPath+slug+"/assets/…" its files.
const DraftsPath = "/instructor/drafts/"

// loadDrafts loads fsys's _drafts/ folder beside the course c (nil when
// the course itself did not load). It returns nil and no findings when
// there is no such folder. Findings name files as _drafts/<slug>/….
func loadDrafts(fsys fs.FS, opt Options, c *Course) (*Course, []Diagnostic) {
	st, err := fs.Stat(fsys, DraftsDir)
	if err != nil || !st.IsDir() {
		return nil, nil
	}
	sub, err := fs.Sub(fsys, DraftsDir)
	if err != nil {
		return nil, []Diagnostic{{File: DraftsDir, Severity: Error, Message: "cannot read the drafts folder: " + err.Error()}}
	}
	if c == nil {
		c = &Course{Questions: map[string]*quiz.Question{}}
	}
	drafts, diags := loadBeside(sub, opt, c)
	for _, l := range drafts.Lessons {
		if c.Lesson(l.Slug) != nil {
			diags = append(diags, Diagnostic{File: l.Slug, Severity: Error,
				Message: "a draft named like the course's lesson " + l.Slug + ": rename the draft's folder (a draft's slug must be free; move the folder out of _drafts/ to replace the lesson)"})
		} else if to := c.AliasTarget(l.Slug); to != "" {
			diags = append(diags, Diagnostic{File: l.Slug, Severity: Warning,
				Message: "the draft's slug " + l.Slug + " is an alias of the course's lesson " + to + ": published as it is, it would take that old address over"})
		}
	}
	for i := range diags {
		diags[i].File = DraftsDir + "/" + diags[i].File
	}
	return drafts, diags
}

// lessonPath is the URL path of a lesson page this load links to: the
// draft preview for a draft, /lessons/ for a lesson of the course.
func (ld *loader) lessonPath(slug string) string {
	if ld.outer != nil && ld.slugs[slug] {
		return DraftsPath + slug
	}
	return "/lessons/" + slug
}

// outerQuestion is the course's question with this id when loading drafts.
func (ld *loader) outerQuestion(id string) *quiz.Question {
	if ld.outer == nil {
		return nil
	}
	return ld.outer.Questions[id]
}
