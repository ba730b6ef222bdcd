package web

import (
	"net/http"

	"github.com/a-h/templ"
	"github.com/go-chi/chi/v5"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/web/instructor"
	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/views"
)

// The preview of a course's _drafts/ lesson, rendered like a lesson page
// with nothing recorded. The instructor area owns the routes and their
// guard (/instructor/drafts/{slug}, instructors only:
// web/instructor/drafts.go); the rendering is the learner pages', so it
// lives here and the area calls it (instructor.LearnerSide).

// draftShow is GET /instructor/drafts/{slug}: the draft rendered like a
// lesson page, under a "Draft preview" banner, with nothing recorded.
func (s *Server) draftShow(w http.ResponseWriter, r *http.Request) {
	slug := chi.URLParam(r, "slug")
	c := s.course()
	if c.Drafts == nil || c.Drafts.Lesson(slug) == nil {
		s.NotFound(w, r)
		return
	}
	d := c.Drafts
	l := d.Lesson(slug)
	lang := page.LangOf(r)
	pg := l.Page(lang)
	if pg == nil {
		s.NotFound(w, r)
		return
	}
	t := tr(lang)
	lr := &lessonRequest{r: r, Lang: lang, T: t, Learner: learnerID(r), Course: d, Lesson: l, Page: pg, Draft: true,
		// No learner's records: the page reads none and shows questions unanswered.
		State: lessonState{Slug: slug, Status: http.StatusOK, Quiz: &quizPage{loaded: true, placedAt: map[string]int{}}}}
	v := s.lessonView(d, l, lang, func(i int) templ.Component {
		if i < 0 {
			return views.DraftNote(t)
		}
		return s.segment(lr, pg.Body[i])
	})
	// Links of the page: the language switch stays on the preview; a
	// prerequisite or neighbour is a draft's preview or the course's lesson.
	href := instructor.DraftHref(slug)
	for i := range v.Chrome.Langs {
		v.Chrome.Langs[i].Href = href + "?lang=" + v.Chrome.Langs[i].Code
	}
	v.Prereqs = v.Prereqs[:0]
	for _, p := range pg.Prerequisites {
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
	_, errs := instructor.DraftFindings(c, slug)
	v.Banner = views.DraftBanner(t, errs)
	s.Render(w, r, http.StatusOK, views.LessonView(v))
}

// draftAsset is GET /instructor/drafts/{slug}/assets/*: a file of a
// draft's folder, served as lesson files are (lesson_asset.go).
func (s *Server) draftAsset(w http.ResponseWriter, r *http.Request) {
	d := s.course().Drafts
	if d == nil {
		s.NotFound(w, r)
		return
	}
	s.serveAsset(w, r, d, chi.URLParam(r, "slug"), chi.URLParam(r, "*"))
}

// draftLink links slug from a draft: another draft's preview, else the
// course's lesson (else the bare slug, which check reports).
func draftLink(c *lessons.Course, slug, lang string) views.Link {
	if l := c.Drafts.Lesson(slug); l != nil {
		if p := l.Page(lang); p != nil {
			return views.Link{Href: instructor.DraftHref(slug), Title: p.Title}
		}
	}
	return lessonLink(c, slug, lang)
}
