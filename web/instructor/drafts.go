package instructor

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/views"
)

// Draft lessons (lessons/drafts.go): the course's _drafts/ folder, loaded
// beside the course on every load as Course.Drafts. Only instructors see
// them, here (the routes sit behind requireInstructor); learners get 404
// at /lessons/{draft} because drafts are not lessons of the course. A
// preview records nothing: no "opened", no completion, and its questions
// render disabled (lessonRequest.Draft).

// draftsIndex is GET /instructor/drafts: every draft with its check findings.
func (s *Area) draftsIndex(w http.ResponseWriter, r *http.Request) {
	lang := page.LangOf(r)
	t := s.tr(lang)
	c := s.course()
	v := views.Drafts{Chrome: s.Chrome(r, t("draft.title")), Present: c.Drafts != nil}
	listed := map[string]bool{}
	if c.Drafts != nil {
		for _, l := range c.Drafts.Lessons {
			e := views.DraftEntry{Slug: l.Slug, Title: l.Page(lang).Title, Href: DraftHref(l.Slug)}
			var langs []string
			for _, k := range lessons.Langs {
				if p := l.Pages[k]; p != nil && !p.Fallback {
					langs = append(langs, k)
				}
			}
			e.Langs = strings.Join(langs, ", ")
			e.Findings, e.Errors = DraftFindings(c, l.Slug)
			v.Errors += e.Errors
			v.Drafts = append(v.Drafts, e)
			listed[l.Slug] = true
		}
	}
	for _, d := range c.DraftFindings {
		if !listed[draftSlugOf(d.File)] {
			v.Findings = append(v.Findings, d.String())
		}
	}
	s.Render(w, r, http.StatusOK, views.DraftsView(v))
}

// DraftHref is the preview of the draft with slug.
func DraftHref(slug string) string { return lessons.DraftsPath + url.PathEscape(slug) }

// DraftFindings are the findings of the draft with slug as lines, and how
// many are errors.
func DraftFindings(c *lessons.Course, slug string) (lines []string, errs int) {
	for _, d := range c.DraftFindings {
		if draftSlugOf(d.File) != slug {
			continue
		}
		lines = append(lines, d.String())
		if d.Severity == lessons.Error {
			errs++
		}
	}
	return lines, errs
}

// draftSlugOf is the draft folder a finding's file is in ("" for none).
func draftSlugOf(file string) string {
	rest, ok := strings.CutPrefix(file, lessons.DraftsDir+"/")
	if !ok {
		return ""
	}
	slug, _, _ := strings.Cut(rest, "/")
	return slug
}
