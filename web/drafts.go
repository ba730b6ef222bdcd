package web

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/a-h/templ"
	"github.com/go-chi/chi/v5"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/web/views"
)

// Draft lessons (lessons/drafts.go): the course's _drafts/ folder, loaded
// beside the course on every load as Course.Drafts. Only instructors see
// them, here (the routes sit behind requireInstructor); learners get 404
// at /lessons/{draft} because drafts are not lessons of the course. A
// preview records nothing: no "opened", no completion, and its questions
// render disabled (lessonRequest.Draft).

// draftsIndex is GET /instructor/drafts: every draft with its check findings.
func (s *Server) draftsIndex(w http.ResponseWriter, r *http.Request) {
	lang := langOf(r)
	t := tr(lang)
	c := s.course()
	v := views.Drafts{Chrome: s.chrome(r, t("draft.title")), Present: c.Drafts != nil}
	listed := map[string]bool{}
	if c.Drafts != nil {
		for _, l := range c.Drafts.Lessons {
			e := views.DraftEntry{Slug: l.Slug, Title: l.Page(lang).Title, Href: draftHref(l.Slug)}
			var langs []string
			for _, k := range lessons.Langs {
				if p := l.Pages[k]; p != nil && !p.Fallback {
					langs = append(langs, k)
				}
			}
			e.Langs = strings.Join(langs, ", ")
			e.Findings, e.Errors = draftFindings(c, l.Slug)
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
	s.render(w, r, http.StatusOK, views.DraftsView(v))
}

// draftShow is GET /instructor/drafts/{slug}: the draft rendered like a
// lesson page, under a "Draft preview" banner, with nothing recorded.
func (s *Server) draftShow(w http.ResponseWriter, r *http.Request) {
	slug := chi.URLParam(r, "slug")
	c := s.course()
	if c.Drafts == nil || c.Drafts.Lesson(slug) == nil {
		s.notFound(w, r)
		return
	}
	d := c.Drafts
	l := d.Lesson(slug)
	lang := langOf(r)
	page := l.Page(lang)
	if page == nil {
		s.notFound(w, r)
		return
	}
	t := tr(lang)
	lr := &lessonRequest{r: r, Lang: lang, T: t, Learner: learnerID(r), Course: d, Lesson: l, Page: page, Draft: true,
		// No learner's records: the page reads none and shows questions unanswered.
		State: lessonState{Slug: slug, Status: http.StatusOK, Quiz: &quizPage{loaded: true, placedAt: map[string]int{}}}}
	v := s.lessonView(d, l, lang, func(i int) templ.Component {
		if i < 0 {
			return views.DraftNote(t)
		}
		return s.segment(lr, page.Body[i])
	})
	// Links of the page: the language switch stays on the preview; a
	// prerequisite or neighbour is a draft's preview or the course's lesson.
	href := draftHref(slug)
	for i := range v.Chrome.Langs {
		v.Chrome.Langs[i].Href = href + "?lang=" + v.Chrome.Langs[i].Code
	}
	v.Prereqs = v.Prereqs[:0]
	for _, p := range page.Prerequisites {
		v.Prereqs = append(v.Prereqs, draftLink(c, p, lang))
	}
	v.Prev, v.Next = nil, nil
	if prev, next := d.Neighbours(slug); prev != nil || next != nil {
		if prev != nil {
			link := draftLink(c, prev.Slug, lang)
			v.Prev = &link
		}
		if next != nil {
			link := draftLink(c, next.Slug, lang)
			v.Next = &link
		}
	}
	_, errs := draftFindings(c, slug)
	v.Banner = views.DraftBanner(t, errs)
	s.render(w, r, http.StatusOK, views.LessonView(v))
}

// draftAsset is GET /instructor/drafts/{slug}/assets/*: a file of a
// draft's folder, served as lesson files are (lesson_asset.go).
func (s *Server) draftAsset(w http.ResponseWriter, r *http.Request) {
	d := s.course().Drafts
	if d == nil {
		s.notFound(w, r)
		return
	}
	s.serveAsset(w, r, d, chi.URLParam(r, "slug"), chi.URLParam(r, "*"))
}

// draftHref is the preview of the draft with slug.
func draftHref(slug string) string { return lessons.DraftsPath + url.PathEscape(slug) }

// draftLink links slug from a draft: another draft's preview, else the
// course's lesson (else the bare slug, which check reports).
func draftLink(c *lessons.Course, slug, lang string) views.Link {
	if l := c.Drafts.Lesson(slug); l != nil {
		if p := l.Page(lang); p != nil {
			return views.Link{Href: draftHref(slug), Title: p.Title}
		}
	}
	return lessonLink(c, slug, lang)
}

// draftFindings are the findings of the draft with slug as lines, and how
// many are errors.
func draftFindings(c *lessons.Course, slug string) (lines []string, errs int) {
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
