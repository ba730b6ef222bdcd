package web

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/lti"
	"github.com/rdmalab/rdmalab/quiz"
	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/views"
)

// Deep linking (LTI Deep Linking 2.0): a verified LtiDeepLinkingRequest
// from an instructor opens a picker at /lti/deep-link/{token}; the choice
// goes back to the LMS as a signed LtiDeepLinkingResponse, posted by the
// browser to deep_link_return_url. The request waits in memory under an
// unguessable token (no cookie: the picker runs in the LMS's iframe, where
// third-party cookies may be dropped); a restart in between means
// opening the picker again from the LMS.

// dlLife is how long a picker stays usable.
const dlLife = 30 * time.Minute

// dlMax bounds the pickers kept at once (each is a verified launch, so
// only registered platforms' instructors can fill it).
const dlMax = 1000

type deepLinks struct {
	mu sync.Mutex
	m  map[string]*lti.Launch
}

func (d *deepLinks) put(l *lti.Launch) string {
	b := make([]byte, 16)
	rand.Read(b)
	tok := base64.RawURLEncoding.EncodeToString(b)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = map[string]*lti.Launch{}
	}
	now := time.Now()
	for k, v := range d.m {
		if now.After(v.Expires.Add(dlLife)) || len(d.m) >= dlMax {
			delete(d.m, k)
		}
	}
	d.m[tok] = l
	return tok
}

// get returns the picker's launch; take also forgets it (a response is
// sent once).
func (d *deepLinks) get(tok string, take bool) *lti.Launch {
	d.mu.Lock()
	defer d.mu.Unlock()
	l := d.m[tok]
	if l == nil || time.Now().After(l.Expires.Add(dlLife)) {
		delete(d.m, tok)
		return nil
	}
	if take {
		delete(d.m, tok)
	}
	return l
}

// ltiDeepLinkStart keeps a verified deep-linking request and sends the
// instructor to the picker. Only the course's instructors and TAs place
// content. The course's class is made (or found) now, with the
// instructor as its staff: graded mode can be set before any learner
// opens the placed link.
func (s *Server) ltiDeepLinkStart(w http.ResponseWriter, r *http.Request, l *lti.Launch) {
	if l.Role() == lti.RoleIsLearner {
		s.ltiRefused(w, r, &lti.Error{Kind: "role", Err: errNoDeepLink})
		return
	}
	if l.Context.ID != "" {
		rec := store.LTILaunch{PlatformID: l.Platform.ID, Sub: l.Subject,
			Name: l.Name, Email: l.Email, Role: ltiRole(l), ContextID: l.Context.ID, ContextTitle: l.Context.Title}
		if _, ok := s.ltiRecord(w, r, l, rec); !ok {
			return
		}
	}
	http.Redirect(w, r, "/lti/deep-link/"+s.deepLinks.put(l), http.StatusSeeOther)
}

// ltiDeepLinkShow is GET /lti/deep-link/{token}.
func (s *Server) ltiDeepLinkShow(w http.ResponseWriter, r *http.Request) {
	if !s.ltiOn(w, r) {
		return
	}
	l := s.deepLinks.get(chi.URLParam(r, "token"), false)
	if l == nil {
		s.ltiRefused(w, r, &lti.Error{Kind: "picker", Err: errNoDeepLink})
		return
	}
	lang := page.LangOf(r)
	t := tr(lang)
	v := views.LTIPick{Chrome: s.Chrome(r, t("lti.pick.title")), Action: r.URL.Path,
		CanGrade: l.DeepLink.AcceptsLineItem(), Platform: l.Platform.Issuer, ContextName: l.Context.Title}
	for _, ls := range s.course().Lessons {
		c := views.LTILessonChoice{Value: "lesson:" + ls.Slug, Title: ltiLessonTitle(ls, lang)}
		if ls.Quiz != nil {
			for _, q := range ls.Quiz.Questions {
				c.Questions = append(c.Questions, views.Option{Value: "question:" + ls.Slug + ":" + q.ID, Label: questionLabel(q, lang)})
			}
		}
		v.Lessons = append(v.Lessons, c)
	}
	w.Header().Set("Cache-Control", "no-store")
	s.Render(w, r, http.StatusOK, views.LTIPickView(v))
}

// ltiLessonTitle is the lesson's title in lang (its fallback rule: lessons').
func ltiLessonTitle(l *lessons.Lesson, lang string) string {
	return l.Page(lang).Title
}

// questionLabel is the start of a question's prompt, to recognise it by.
func questionLabel(q *quiz.Question, lang string) string {
	p := []rune(strings.Join(strings.Fields(q.Prompt.Get(lang)), " "))
	if len(p) > 80 {
		p = append(p[:79], '…')
	}
	return q.ID + " — " + string(p)
}

// ltiDeepLinkPost is POST /lti/deep-link/{token}: sign the response for
// the chosen lesson or question and hand the browser the form that posts
// it to the LMS.
func (s *Server) ltiDeepLinkPost(w http.ResponseWriter, r *http.Request) {
	if !s.ltiOn(w, r) {
		return
	}
	tok := chi.URLParam(r, "token")
	l := s.deepLinks.get(tok, false)
	if l == nil {
		s.ltiRefused(w, r, &lti.Error{Kind: "picker", Err: errNoDeepLink})
		return
	}
	lang := page.LangOf(r)
	t := tr(lang)
	kind, rest, _ := strings.Cut(r.PostFormValue("item"), ":")
	slug, qid, _ := strings.Cut(rest, ":")
	c := s.course()
	ls := c.Lesson(slug)
	if ls == nil || (kind == "question" && questionPlace(ls, qid) == "") || (kind != "question" && kind != "lesson") {
		http.Redirect(w, r, r.URL.Path, http.StatusSeeOther) // nothing (valid) chosen: the picker again
		return
	}
	item := lti.ContentItem{
		Title:  ltiLessonTitle(ls, lang),
		URL:    s.ltiBase(r) + "/lessons/" + url.PathEscape(ls.Slug),
		Custom: map[string]string{"lesson": ls.Slug},
	}
	max := linkMax(store.LTIGradeLink{}, ls) // the lesson's questions and programs, as its scores give
	chosen := trf(lang, "lti.post.lesson", item.Title)
	if kind == "question" {
		item.Title += " — " + qid
		item.Custom["question"] = qid
		max = 1
		chosen = trf(lang, "lti.post.question", qid, ltiLessonTitle(ls, lang))
	}
	if r.PostFormValue("graded") == "1" && l.DeepLink.AcceptsLineItem() && max > 0 {
		res := ls.Slug
		if kind == "question" {
			res += "/" + qid
		}
		item.LineItem = &lti.LineItem{ScoreMaximum: float64(max), Label: item.Title, ResourceID: res, Tag: "rdmalab"}
	}
	jwt, err := s.cfg.LTI.Tool.DeepLinkResponse(l, []lti.ContentItem{item}, "")
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	s.deepLinks.get(tok, true)
	// This page's form posts to the LMS: the lab's CSP allows form posts
	// to its own origin only, so this answer names the LMS's origin too.
	ret, _ := url.Parse(l.DeepLink.ReturnURL)
	w.Header().Set("Content-Security-Policy", strings.Replace(contentSecurityPolicy,
		"form-action 'self'", "form-action 'self' "+ret.Scheme+"://"+ret.Host, 1))
	w.Header().Set("Cache-Control", "no-store")
	ch := s.Chrome(r, t("lti.post.title"))
	ch.Scripts = append(ch.Scripts, "js/lti-post.js")
	s.Render(w, r, http.StatusOK, views.LTIPostView(views.LTIPost{Chrome: ch, Action: l.DeepLink.ReturnURL, JWT: jwt, Chosen: chosen}))
}
