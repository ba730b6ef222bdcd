package instructor

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/views"
)

// Instructor sessions live server-side in SQLite; the cookie carries only a
// random token whose hash is the row key. Policy (docs/authoring.md,
// "Instructor accounts"):
//   - no instructor cookie and no learner cookie (a fresh browser) → redirect
//     to the login page;
//   - a learner cookie but no instructor cookie (a learner who follows an
//     instructor URL) → 403 with the login form and no class data, so an
//     instructor who browsed the lessons first can still log in right there;
//   - an instructor cookie that is forged or expired → cleared, redirect to
//     the login page.

const (
	// SessionCookie carries an instructor's session token.
	SessionCookie = "lab_instructor"
	// SessionTTL is how long an instructor stays logged in.
	SessionTTL = 12 * time.Hour
	// Login throttle. Per account (from any address, reset by a success):
	// LoginFreeTries failures cost nothing, then each next try must wait
	// twice as long after the last failure, up to LoginMaxDelay — a growing
	// delay, not a lockout, so junk logins cannot keep the real instructor
	// out for longer than that. Per client address: LoginIPLimit failures
	// within loginWindow, whatever the usernames.
	loginWindow    = 15 * time.Minute
	LoginFreeTries = 3
	LoginMaxDelay  = 30 * time.Second
	LoginIPLimit   = 20
	// setupTokenTTL is the validity of the first-start setup link.
	setupTokenTTL = 24 * time.Hour
	// AdminUser is the account LAB_ADMIN_PASSWORD sets.
	AdminUser = "admin"
)

// instructorKey holds the store.Instructor of an authenticated request.
const instructorKey ctxKey = 100

func setInstructorCookie(w http.ResponseWriter, r *http.Request, token string, expires time.Time) {
	http.SetCookie(w, &http.Cookie{
		Name:     SessionCookie,
		Value:    token,
		Path:     "/",
		Expires:  expires,
		MaxAge:   int(time.Until(expires) / time.Second),
		HttpOnly: true,
		SameSite: http.SameSiteLaxMode,
		Secure:   page.SecureRequest(r),
	})
}

func clearInstructorCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{
		Name: SessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: page.SecureRequest(r),
	})
}

// sessionInstructor returns the instructor of the request's session cookie.
// present tells whether the request carried an instructor cookie at all.
func (s *Area) sessionInstructor(r *http.Request) (in store.Instructor, present bool, err error) {
	c, cerr := r.Cookie(SessionCookie)
	if cerr != nil {
		return store.Instructor{}, false, store.ErrNoSession
	}
	in, err = s.cfg.Store.SessionInstructor(r.Context(), c.Value)
	return in, true, err
}

// SignedIn reports whether r carries a live instructor session (the live
// reload stream sends a course's errors only to instructors).
func (s *Area) SignedIn(r *http.Request) bool {
	_, _, err := s.sessionInstructor(r)
	return err == nil
}

// currentInstructor is the instructor set by requireInstructor.
func currentInstructor(r *http.Request) (store.Instructor, bool) {
	in, ok := r.Context().Value(instructorKey).(store.Instructor)
	return in, ok
}

// requireInstructor guards instructor routes (see the policy above).
func (s *Area) requireInstructor(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, present, err := s.sessionInstructor(r)
		switch {
		case err == nil:
			w.Header().Set("Cache-Control", "no-store")
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), instructorKey, in)))
		case !errors.Is(err, store.ErrNoSession):
			s.InternalError(w, r, err)
		case present:
			clearInstructorCookie(w, r)
			http.Redirect(w, r, loginHref(r.URL.RequestURI(), "expired"), http.StatusSeeOther)
		case s.cfg.Learners.HasLearnerCookie(r):
			s.renderLogin(w, r, http.StatusForbidden, views.InstructorLogin{
				Next: safeNext(r.URL.RequestURI()), Notice: s.tr(page.LangOf(r))("instr.login.only"),
			})
		default:
			http.Redirect(w, r, loginHref(r.URL.RequestURI(), ""), http.StatusSeeOther)
		}
	})
}

// loginHref is the login page that returns to next; why adds a notice.
func loginHref(next, why string) string {
	q := url.Values{}
	if n := safeNext(next); n != "/instructor" {
		q.Set("next", n)
	}
	if why != "" {
		q.Set(why, "1")
	}
	if len(q) == 0 {
		return "/instructor/login"
	}
	return "/instructor/login?" + q.Encode()
}

// safeNext keeps redirects after login inside the instructor area, so the
// login form cannot be used to bounce someone to another site.
func safeNext(next string) string {
	p, query, _ := strings.Cut(next, "?")
	// Only a clean path inside the instructor area: "/instructor/../../evil"
	// would leave it once the browser resolves the dots, so any path that
	// cleaning changes is refused, as are "//host", backslashes, the
	// login and logout pages themselves.
	// Browsers treat "%2e%2e" as "..", so the path is judged unescaped.
	u, err := url.PathUnescape(p)
	clean := err == nil && (u == "/instructor" || strings.HasPrefix(u, "/instructor/") && path.Clean(u) == u)
	if clean && !strings.Contains(next, "//") && !strings.ContainsAny(next, "\\\r\n") &&
		!strings.HasPrefix(p, "/instructor/login") && !strings.HasPrefix(p, "/instructor/logout") &&
		!strings.Contains(query, "#") {
		return next
	}
	return "/instructor"
}

func (s *Area) renderLogin(w http.ResponseWriter, r *http.Request, status int, v views.InstructorLogin) {
	t := s.tr(page.LangOf(r))
	v.Chrome = s.Chrome(r, t("instr.login.title"))
	v.Action = "/instructor/login"
	if v.Next == "" {
		v.Next = "/instructor"
	}
	if n, err := s.cfg.Store.InstructorCount(r.Context()); err == nil && n == 0 {
		v.Setup = true
	}
	w.Header().Set("Cache-Control", "no-store")
	s.Render(w, r, status, views.InstructorLoginView(v))
}

// instructorLoginForm is GET /instructor/login.
func (s *Area) instructorLoginForm(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	next := safeNext(q.Get("next"))
	if _, _, err := s.sessionInstructor(r); err == nil {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	t := s.tr(page.LangOf(r))
	v := views.InstructorLogin{Next: next}
	switch {
	case q.Has("expired"):
		v.Notice = t("instr.login.expired")
	case q.Has("bye"):
		v.Notice = t("instr.login.bye")
	}
	s.renderLogin(w, r, http.StatusOK, v)
}

// instructorLogin is POST /instructor/login. Unknown user and wrong password
// get the same message, status and bcrypt work; the rate limit answers
// before any password is checked.
func (s *Area) instructorLogin(w http.ResponseWriter, r *http.Request) {
	if !s.ParseForm(w, r) {
		return
	}
	ctx := r.Context()
	lang := page.LangOf(r)
	user := strings.TrimSpace(r.PostFormValue("username"))
	pw := r.PostFormValue("password")
	next := safeNext(r.PostFormValue("next"))
	ip := page.ClientIP(r)
	db := s.cfg.Store

	if wait, err := s.loginWait(ctx, ip, user); err != nil {
		s.InternalError(w, r, err)
		return
	} else if wait > 0 {
		secs := page.RetryAfter(w, wait)
		s.log.Warn("instructor login throttled", "ip", ip, "user", user, "retry_after_s", secs)
		s.renderLogin(w, r, http.StatusTooManyRequests, views.InstructorLogin{
			Username: user, Next: next, Error: s.trf(lang, "instr.login.wait", secs),
		})
		return
	}
	in, err := db.Authenticate(ctx, user, pw)
	if errors.Is(err, store.ErrBadCredentials) {
		if err := db.RecordLogin(ctx, ip, user, false); err != nil {
			s.InternalError(w, r, err)
			return
		}
		s.log.Warn("instructor login failed", "ip", ip, "user", user)
		s.renderLogin(w, r, http.StatusUnauthorized, views.InstructorLogin{
			Username: user, Next: next, Error: s.tr(lang)("instr.login.bad"),
		})
		return
	}
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	if err := db.RecordLogin(ctx, ip, user, true); err != nil {
		s.InternalError(w, r, err)
		return
	}
	s.startSession(w, r, in, next)
}

// loginWait is how long a login for user from ip must wait before its
// password is checked (0: now). See LoginFreeTries.
func (s *Area) loginWait(ctx context.Context, ip, user string) (time.Duration, error) {
	now := time.Now()
	since := now.Add(-loginWindow)
	_, byIP, err := s.cfg.Store.LoginFailures(ctx, ip, user, since)
	if err != nil {
		return 0, err
	}
	if byIP >= LoginIPLimit {
		return loginWindow, nil
	}
	n, last, err := s.cfg.Store.AccountFailures(ctx, user, since)
	if err != nil {
		return 0, err
	}
	if d := loginDelay(n); d > 0 {
		if wait := last.Add(d).Sub(now); wait > 0 {
			return wait, nil
		}
	}
	return 0, nil
}

// loginDelay is the wait after the last failure that n failures impose:
// none for the first LoginFreeTries, then 1 s, 2 s, 4 s… up to LoginMaxDelay.
func loginDelay(n int) time.Duration {
	if n < LoginFreeTries {
		return 0
	}
	return min(LoginMaxDelay, time.Second<<min(n-LoginFreeTries, 16))
}

// startSession creates a session for in and redirects to next.
func (s *Area) startSession(w http.ResponseWriter, r *http.Request, in store.Instructor, next string) {
	token, expires, err := s.cfg.Store.CreateSession(r.Context(), in.ID, SessionTTL)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	s.log.Info("instructor logged in", "user", in.Username, "ip", page.ClientIP(r))
	s.markStaff(r, in)
	setInstructorCookie(w, r, token, expires)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// instructorLogout is POST /instructor/logout: the session row is deleted,
// so the token is dead even if the cookie survives somewhere.
func (s *Area) instructorLogout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(SessionCookie); err == nil {
		if err := s.cfg.Store.DeleteSession(r.Context(), c.Value); err != nil {
			s.InternalError(w, r, err)
			return
		}
	}
	clearInstructorCookie(w, r)
	http.Redirect(w, r, "/instructor/login?bye=1", http.StatusSeeOther)
}

// SetupInstructors prepares instructor access at start-up. With
// adminPassword it makes sure the account "admin" exists with that password
// and returns "". Otherwise, while no instructor exists, it returns the path
// of a new one-time setup link (valid 24 h) for the caller to print; a
// restart prints a new link and the old one stops working.
func SetupInstructors(ctx context.Context, db *store.DB, adminPassword string) (setupPath string, err error) {
	if adminPassword != "" {
		if _, err := db.SetInstructorPassword(ctx, AdminUser, adminPassword); err != nil {
			return "", err
		}
		return "", nil
	}
	n, err := db.InstructorCount(ctx)
	if err != nil || n > 0 {
		return "", err
	}
	token, err := db.CreateSetupToken(ctx, setupTokenTTL)
	if err != nil {
		return "", err
	}
	return "/instructor/setup?token=" + url.QueryEscape(token), nil
}
