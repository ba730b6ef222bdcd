package instructor

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/views"
)

// inviteTTL is how long an invitation link for a new instructor works.
const inviteTTL = 72 * time.Hour

// accountShow is GET /instructor/account.
func (s *Area) accountShow(w http.ResponseWriter, r *http.Request) {
	s.renderAccount(w, r, http.StatusOK, views.Account{PwSaved: r.URL.Query().Has("saved")})
}

func (s *Area) renderAccount(w http.ResponseWriter, r *http.Request, status int, v views.Account) {
	in, _ := currentInstructor(r)
	list, err := s.cfg.Store.Instructors(r.Context())
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	v.Chrome = s.Chrome(r, s.tr(page.LangOf(r))("acct.title"))
	v.Me, v.TA = in.Username, in.TA()
	for _, i := range list {
		o := views.Option{Value: i.Username}
		if i.TA() {
			o.Label = s.tr(page.LangOf(r))("role.ta")
		}
		v.Instructors = append(v.Instructors, o)
	}
	s.Render(w, r, status, views.AccountView(v))
}

// accountPassword is POST /instructor/account/password: change one's own
// password (the current one is asked again); other sessions end.
func (s *Area) accountPassword(w http.ResponseWriter, r *http.Request) {
	if !s.ParseForm(w, r) {
		return
	}
	in, _ := currentInstructor(r)
	keep := ""
	if c, err := r.Cookie(SessionCookie); err == nil {
		keep = c.Value
	}
	lang := page.LangOf(r)
	err := s.cfg.Store.ChangeOwnPassword(r.Context(), in.Username, r.PostFormValue("current"), r.PostFormValue("password"), keep)
	var ve *store.ValidationError
	switch {
	case errors.Is(err, store.ErrBadCredentials):
		s.renderAccount(w, r, http.StatusUnprocessableEntity, views.Account{PwError: s.tr(lang)("acct.pw.wrong")})
		return
	case errors.As(err, &ve):
		s.renderAccount(w, r, http.StatusUnprocessableEntity, views.Account{
			PwError: s.trf(lang, "acct.pw.invalid", store.MinPasswordLen, store.MaxPasswordLen)})
		return
	case err != nil:
		s.InternalError(w, r, err)
		return
	}
	s.log.Info("instructor changed own password", "user", in.Username)
	http.Redirect(w, r, "/instructor/account?saved=1#password", http.StatusSeeOther)
}

// The first-start setup link and an instructor's invitation are one
// mechanism (store.Invitation, store.Redeem: a one-time token whose hash
// is kept, with a role, a class and an expiry); they differ in the door —
// path, words — and in that the setup link makes the first account only.
type accountLink struct {
	kind         string // "setup" or "invite"
	first        bool   // the setup link
	path         string
	title, lede  string // string keys
	invalid, log string
}

var (
	setupLink = accountLink{kind: "setup", first: true, path: "/instructor/setup",
		title: "instr.setup.title", lede: "instr.setup.lede", invalid: "instr.setup.invalid", log: "first instructor account created"}
	inviteLink = accountLink{kind: "invite", path: "/instructor/invite",
		title: "acct.join.title", lede: "acct.join.lede", invalid: "acct.join.invalid", log: "instructor account created from an invitation"}
)

// linkForm is GET /instructor/setup?token=… and GET /instructor/invite?token=….
func (s *Area) linkForm(l accountLink) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		token := r.URL.Query().Get("token")
		inv, err := s.cfg.Store.Invitation(r.Context(), token, l.first)
		if err != nil && !errors.Is(err, store.ErrBadInvite) {
			s.InternalError(w, r, err)
			return
		}
		ok := err == nil
		status := http.StatusOK
		if !ok {
			status = http.StatusNotFound
		}
		v := views.InstructorSetup{Token: token, Invalid: !ok}
		if inv.Role == store.RoleTA {
			v.Lede = s.trf(page.LangOf(r), "acct.join.ta", inv.Cohort)
		}
		s.renderLink(w, r, l, status, v)
	}
}

// linkAccept is POST /instructor/setup and POST /instructor/invite: create
// the account with the link, log in.
func (s *Area) linkAccept(l accountLink) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.ParseForm(w, r) {
			return
		}
		token := r.PostFormValue("token")
		user := strings.TrimSpace(r.PostFormValue("username"))
		in, err := s.cfg.Store.Redeem(r.Context(), token, user, r.PostFormValue("password"), l.first)
		var ve *store.ValidationError
		lang := page.LangOf(r)
		switch {
		case errors.As(err, &ve):
			s.renderLink(w, r, l, http.StatusUnprocessableEntity, views.InstructorSetup{Token: token, Username: user,
				Error: s.trf(lang, "acct.join.rules", store.MaxUsernameLen, store.MinPasswordLen, store.MaxPasswordLen)})
			return
		case errors.Is(err, store.ErrInstructorTaken):
			s.renderLink(w, r, l, http.StatusConflict, views.InstructorSetup{Token: token, Username: user,
				Error: s.tr(lang)("acct.join.taken")})
			return
		case errors.Is(err, store.ErrUsernameLookalike):
			s.renderLink(w, r, l, http.StatusConflict, views.InstructorSetup{Token: token, Username: user,
				Error: s.tr(lang)("acct.join.lookalike")})
			return
		case errors.Is(err, store.ErrBadInvite):
			s.renderLink(w, r, l, http.StatusNotFound, views.InstructorSetup{Invalid: true})
			return
		case err != nil:
			s.InternalError(w, r, err)
			return
		}
		s.log.Info(l.log, "user", in.Username)
		s.startSession(w, r, in, "/instructor")
	}
}

func (s *Area) renderLink(w http.ResponseWriter, r *http.Request, l accountLink, status int, v views.InstructorSetup) {
	t := s.tr(page.LangOf(r))
	v.Chrome = s.Chrome(r, t(l.title))
	v.Kind, v.Heading, v.InvalidText, v.DefaultLede, v.Action = l.kind, t(l.title), t(l.invalid), t(l.lede), l.path
	w.Header().Set("Cache-Control", "no-store")
	s.Render(w, r, status, views.AccountLinkView(v))
}
