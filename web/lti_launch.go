package web

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/lti"
	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/views"
)

// LTI 1.3 (issue 29): the lab as a tool of a school's LMS. The protocol is
// package lti; these handlers map it onto the lab. The tool's URLs:
//
//	GET|POST /lti/login   third-party login initiation → redirect to the platform's auth endpoint
//	POST     /lti/launch  the platform's form_post with id_token and state
//	GET      /lti/jwks    the tool's public keyset (deep-linking responses, AGS client assertions)
//	GET|POST /lti/deep-link/{token}  the picker an instructor sees in a deep-linking request
//
// The launch is a cross-site POST inside the LMS's iframe, so it passes
// CrossOriginProtection (cross_origin.go bypasses exactly /lti/login and
// /lti/launch): what it carries is trusted only once the signed id_token
// verifies.

// LTI is what the web layer needs of LTI; nil Config.LTI: the /lti URLs
// answer 404 and the instructor page says LTI is off.
type LTI struct {
	Tool *lti.Tool
	// Kick asks the score deliverer for a round now (nil: it polls).
	Kick func()
	// PublicURL is the lab's address as browsers and the LMS reach it
	// (https://lab.example.edu); "" derives it from each request as the
	// connection reached the lab, never from a Host naming another (host_trust.go).
	PublicURL string
	// Background, when set, runs the server's LTI background work (the
	// scores sent as graded lessons close: RunLTICloses) until the
	// caller stops it, before the database closes.
	Background func(run func(context.Context))
}

// ltiBase is the tool's base URL, no trailing slash: --public-url, else
// the lab as the request reached it, never a Host it cannot vouch for
// (host_trust.go).
func (s *Server) ltiBase(r *http.Request) string {
	if u := s.cfg.LTI.PublicURL; u != "" {
		return strings.TrimSuffix(u, "/")
	}
	return s.requestBase(r)
}

// ltiOn answers 404 when LTI is off.
func (s *Server) ltiOn(w http.ResponseWriter, r *http.Request) bool {
	if s.cfg.LTI == nil || s.cfg.LTI.Tool == nil {
		s.NotFound(w, r)
		return false
	}
	return true
}

// ltiJWKS is GET /lti/jwks.
func (s *Server) ltiJWKS(w http.ResponseWriter, r *http.Request) {
	if !s.ltiOn(w, r) {
		return
	}
	b, err := s.cfg.LTI.Tool.JWKS()
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.Write(b)
}

// ltiLogin is GET and POST /lti/login: store a state and nonce, bind the
// state to this browser with a cookie, send the browser to the platform.
// Every login writes a row, so it counts against the address's write rate
// like any write.
func (s *Server) ltiLogin(w http.ResponseWriter, r *http.Request) {
	if !s.ltiOn(w, r) {
		return
	}
	if !s.ltiAllow(w, r) {
		return
	}
	r.ParseForm()
	to, state, err := s.cfg.LTI.Tool.Login(r.Context(), lti.LoginRequestOf(r.Form), s.ltiBase(r)+"/lti/launch")
	if err != nil {
		s.ltiRefused(w, r, err)
		return
	}
	s.setLTIStateCookie(w, r, state)
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, to, http.StatusFound)
}

// setLTIStateCookie binds a login's state to this browser until its
// launch (lti.StateLife): the launch is refused unless the browser sends
// it back. It travels as the learner cookie does (setLTICookie): over
// HTTPS SameSite=None; Secure; Partitioned, so the LMS's frame keeps it;
// over plain HTTP with no SameSite attribute, which browsers send with a
// top-level cross-site POST made within two minutes (a trial on
// localhost, the LMS opening the lab in a new window).
func (s *Server) setLTIStateCookie(w http.ResponseWriter, r *http.Request, state string) {
	c := &http.Cookie{Name: lti.StateCookie(state), Value: state, Path: "/lti/", MaxAge: int(lti.StateLife / time.Second), HttpOnly: true}
	if page.SecureRequest(r) {
		c.Secure, c.SameSite, c.Partitioned = true, http.SameSiteNoneMode, true
	}
	http.SetCookie(w, c)
}

// ltiBrowserHasState reports whether the launch comes from the browser
// that started its login: the one holding the state's cookie.
func ltiBrowserHasState(r *http.Request, state string) bool {
	c, err := r.Cookie(lti.StateCookie(state))
	return err == nil && state != "" && subtle.ConstantTimeCompare([]byte(c.Value), []byte(state)) == 1
}

// ltiAllow applies the per-address write rate (write_guard.go), with a
// page that speaks of the LMS link, not of a run.
func (s *Server) ltiAllow(w http.ResponseWriter, r *http.Request) bool {
	addr := page.AddrKey(page.ClientAddr(r))
	if ok, wait := s.limits.write.allow(addr); !ok {
		secs := page.RetryAfter(w, wait)
		s.log.Warn("write rate limit", "addr", addr, "path", r.URL.Path, "retry_after_s", secs)
		lang := page.LangOf(r)
		t := tr(lang)
		w.Header().Set("Cache-Control", "no-store")
		s.Render(w, r, http.StatusTooManyRequests, views.ErrorView(views.ErrorPage{
			Chrome: s.Chrome(r, t("lti.busy")), Status: http.StatusTooManyRequests, Heading: t("lti.busy"),
			Message: trf(lang, "limit.writes", secs)}))
		return false
	}
	return true
}

// ltiRefused is the page of a refused login or launch: why, in the
// learner's language, and what to do. The cause is logged for the admin.
func (s *Server) ltiRefused(w http.ResponseWriter, r *http.Request, err error) {
	k := lti.KindOf(err)
	if k == "" {
		s.InternalError(w, r, err)
		return
	}
	s.log.Warn("lti refused", "kind", string(k), "addr", page.ClientAddr(r), "err", err)
	t := tr(page.LangOf(r))
	status := http.StatusForbidden
	if k == lti.KindRequest {
		status = http.StatusBadRequest
	}
	w.Header().Set("Cache-Control", "no-store")
	s.Render(w, r, status, views.ErrorView(views.ErrorPage{
		Chrome: s.Chrome(r, t("lti.refused")), Status: status, Heading: t("lti.refused"), Message: t("lti.refused." + string(k)),
	}))
}

// ltiArchived is the page of a launch into a course whose class the
// instructor archived: nothing was recorded and no score goes out.
func (s *Server) ltiArchived(w http.ResponseWriter, r *http.Request) {
	t := tr(page.LangOf(r))
	w.Header().Set("Cache-Control", "no-store")
	s.Render(w, r, http.StatusConflict, views.ErrorView(views.ErrorPage{
		Chrome: s.Chrome(r, t("lti.archived")), Status: http.StatusConflict, Heading: t("lti.archived"), Message: t("lti.archived.lede"),
	}))
}

// ltiLaunch is POST /lti/launch.
func (s *Server) ltiLaunch(w http.ResponseWriter, r *http.Request) {
	if !s.ltiOn(w, r) {
		return
	}
	if !s.ltiAllow(w, r) {
		return
	}
	state := r.PostFormValue("state")
	if state != "" && !ltiBrowserHasState(r, state) {
		// Not the browser that started this login: a token issued to
		// someone else, posted from here (login CSRF). The state stays
		// unused, for its own browser.
		s.ltiRefused(w, r, &lti.Error{Kind: lti.KindBrowser, Err: errors.New("no state cookie for this launch's state")})
		return
	}
	l, err := s.cfg.LTI.Tool.Launch(r.Context(), state, r.PostFormValue("id_token"))
	if err != nil {
		s.ltiRefused(w, r, err)
		return
	}
	if l.MessageType == lti.MsgDeepLinking {
		s.ltiDeepLinkStart(w, r, l)
		return
	}
	slug, question := ltiTarget(s.course(), l)
	rec := store.LTILaunch{PlatformID: l.Platform.ID, Sub: l.Subject, Name: l.Name, Email: l.Email,
		Role: ltiRole(l), ContextID: l.Context.ID, ContextTitle: l.Context.Title}
	if l.AGS.CanScore() && slug != "" {
		rec.LineItem, rec.Lesson, rec.Question = l.AGS.LineItem, slug, question
	}
	done, ok := s.ltiRecord(w, r, l, rec)
	if !ok {
		return
	}
	if rec.LineItem != "" {
		// Work done before this link was graded (another link, a merge)
		// reaches the new column now, not at the next answer.
		s.ltiQueueScores(r.Context(), done.Learner, "", true)
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, ltiLanding(s.course(), slug, question), http.StatusSeeOther)
}

func ltiRole(l *lti.Launch) string {
	switch l.Role() {
	case lti.RoleIsInstructor:
		return "instructor"
	case lti.RoleIsTA:
		return "ta"
	}
	return "learner"
}

// setLTICookie makes the launched user the browser's learner. The launch
// usually runs in the LMS's iframe, a third-party context: there a Lax
// cookie is never sent back, so over HTTPS the cookie is SameSite=None;
// Secure; Partitioned (CHIPS): sent inside the LMS's frame only, not to
// the lab opened on its own, and kept by browsers that block unpartitioned
// third-party cookies. Over plain HTTP (a trial on localhost) SameSite=None
// is impossible, so it is Lax and works when the LMS opens the lab in a
// new window. The cookie is the signed learner cookie either way.
func (s *Server) setLTICookie(w http.ResponseWriter, r *http.Request, id string) {
	if !page.SecureRequest(r) {
		s.setLearnerCookie(w, r, id)
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: learnerCookie, Value: s.learnerCookieValue(id), Path: "/", MaxAge: int(learnerCookieAge / time.Second),
		HttpOnly: true, Secure: true, SameSite: http.SameSiteNoneMode, Partitioned: true,
	})
}

// ltiTarget is what a launch opens: the custom parameters lesson and
// question (set by this tool's deep linking, or typed by an admin in the
// LMS), else a /lessons/{slug} target_link_uri; ("", "") is the course
// home. Only a lesson slug and question id are taken from the launch,
// never a URL to redirect to.
func ltiTarget(c *lessons.Course, l *lti.Launch) (slug, question string) {
	slug, question = l.Custom["lesson"], l.Custom["question"]
	if slug == "" {
		if u, err := url.Parse(l.TargetLink); err == nil {
			if rest, ok := strings.CutPrefix(u.Path, "/lessons/"); ok {
				slug, _, _ = strings.Cut(rest, "/")
			}
		}
	}
	ls := c.Lesson(slug)
	if ls == nil {
		return "", ""
	}
	if question != "" && questionPlace(ls, question) == "" {
		question = ""
	}
	return ls.Slug, question
}

// questionPlace is the DOM id of the question on the lesson page ("" when
// the lesson has no such question): inline where ::quiz places it, else
// in the checkpoint.
func questionPlace(l *lessons.Lesson, id string) string {
	if l.Quiz == nil {
		return ""
	}
	found := false
	for _, q := range l.Quiz.Questions {
		found = found || q.ID == id
	}
	if !found {
		return ""
	}
	for _, p := range l.Pages {
		for _, seg := range p.Body {
			if seg.Kind == lessons.SegQuiz && seg.ID == id {
				return inlinePrefix + id
			}
		}
	}
	return checkpointPrefix + id
}

// ltiLanding is the URL a launch lands on.
func ltiLanding(c *lessons.Course, slug, question string) string {
	if slug == "" {
		return "/"
	}
	u := "/lessons/" + url.PathEscape(slug)
	if question != "" {
		u += "#" + questionPlace(c.Lesson(slug), question)
	}
	return u
}

// errNoDeepLink is a deep-linking picker whose request expired or never was.
var errNoDeepLink = errors.New("no such deep-linking request")

// ltiRecord maps launch l (as rec, the roster's URL added when the LMS
// offers one) onto its learner and class and signs this browser in as
// that learner; false when it answered the request itself (an archived
// course, a store error). The resource-link launch and the deep-linking
// launch both go through it.
func (s *Server) ltiRecord(w http.ResponseWriter, r *http.Request, l *lti.Launch, rec store.LTILaunch) (store.LTILaunched, bool) {
	if l.NRPS != nil {
		rec.MembershipsURL = l.NRPS.ContextMembershipsURL
	}
	done, err := s.cfg.Store.RecordLTILaunch(r.Context(), rec)
	if errors.Is(err, store.ErrLTIClassArchived) {
		s.ltiArchived(w, r)
		return done, false
	}
	if err != nil {
		s.InternalError(w, r, err)
		return done, false
	}
	s.setLTICookie(w, r, done.Learner)
	return done, true
}
