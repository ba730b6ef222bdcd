package web

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/views"
)

// inviteTTL is how long an invitation link for a new instructor works.
const inviteTTL = 72 * time.Hour

// accountShow is GET /instructor/account.
func (s *Server) accountShow(w http.ResponseWriter, r *http.Request) {
	s.renderAccount(w, r, http.StatusOK, views.Account{PwSaved: r.URL.Query().Has("saved")})
}

func (s *Server) renderAccount(w http.ResponseWriter, r *http.Request, status int, v views.Account) {
	in, _ := currentInstructor(r)
	list, err := s.cfg.Store.Instructors(r.Context())
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	v.Chrome = s.chrome(r, tr(langOf(r))("acct.title"))
	v.Me, v.TA = in.Username, in.TA()
	for _, i := range list {
		o := views.Option{Value: i.Username}
		if i.TA() {
			o.Label = tr(langOf(r))("role.ta")
		}
		v.Instructors = append(v.Instructors, o)
	}
	s.render(w, r, status, views.AccountView(v))
}

// accountPassword is POST /instructor/account/password: change one's own
// password (the current one is asked again); other sessions end.
func (s *Server) accountPassword(w http.ResponseWriter, r *http.Request) {
	if !s.parseForm(w, r) {
		return
	}
	in, _ := currentInstructor(r)
	keep := ""
	if c, err := r.Cookie(instructorCookie); err == nil {
		keep = c.Value
	}
	lang := langOf(r)
	err := s.cfg.Store.ChangeOwnPassword(r.Context(), in.Username, r.PostFormValue("current"), r.PostFormValue("password"), keep)
	var ve *store.ValidationError
	switch {
	case errors.Is(err, store.ErrBadCredentials):
		s.renderAccount(w, r, http.StatusUnprocessableEntity, views.Account{PwError: tr(lang)("acct.pw.wrong")})
		return
	case errors.As(err, &ve):
		s.renderAccount(w, r, http.StatusUnprocessableEntity, views.Account{
			PwError: trf(lang, "acct.pw.invalid", store.MinPasswordLen, store.MaxPasswordLen)})
		return
	case err != nil:
		s.internalError(w, r, err)
		return
	}
	s.log.Info("instructor changed own password", "user", in.Username)
	http.Redirect(w, r, "/instructor/account?saved=1#password", http.StatusSeeOther)
}

// inviteForm is GET /instructor/invite?token=…
func (s *Server) inviteForm(w http.ResponseWriter, r *http.Request) {
	token := r.URL.Query().Get("token")
	inv, err := s.cfg.Store.InviteByToken(r.Context(), token)
	if err != nil && !errors.Is(err, store.ErrBadInvite) {
		s.internalError(w, r, err)
		return
	}
	ok := err == nil
	status := http.StatusOK
	if !ok {
		status = http.StatusNotFound
	}
	v := views.InstructorSetup{Token: token, Invalid: !ok}
	if inv.Role == store.RoleTA {
		v.Lede = trf(langOf(r), "acct.join.ta", inv.Cohort)
	}
	s.renderInvite(w, r, status, v)
}

// inviteAccept is POST /instructor/invite: create the account, log in.
func (s *Server) inviteAccept(w http.ResponseWriter, r *http.Request) {
	if !s.parseForm(w, r) {
		return
	}
	token := r.PostFormValue("token")
	user := strings.TrimSpace(r.PostFormValue("username"))
	in, err := s.cfg.Store.RedeemInvite(r.Context(), token, user, r.PostFormValue("password"))
	var ve *store.ValidationError
	lang := langOf(r)
	switch {
	case errors.As(err, &ve):
		s.renderInvite(w, r, http.StatusUnprocessableEntity, views.InstructorSetup{Token: token, Username: user,
			Error: trf(lang, "acct.join.rules", store.MaxUsernameLen, store.MinPasswordLen, store.MaxPasswordLen)})
		return
	case errors.Is(err, store.ErrInstructorTaken):
		s.renderInvite(w, r, http.StatusConflict, views.InstructorSetup{Token: token, Username: user,
			Error: tr(lang)("acct.join.taken")})
		return
	case errors.Is(err, store.ErrUsernameLookalike):
		s.renderInvite(w, r, http.StatusConflict, views.InstructorSetup{Token: token, Username: user,
			Error: tr(lang)("acct.join.lookalike")})
		return
	case errors.Is(err, store.ErrBadInvite):
		s.renderInvite(w, r, http.StatusNotFound, views.InstructorSetup{Invalid: true})
		return
	case err != nil:
		s.internalError(w, r, err)
		return
	}
	s.log.Info("instructor account created from an invitation", "user", in.Username)
	s.startSession(w, r, in, "/instructor")
}

func (s *Server) renderInvite(w http.ResponseWriter, r *http.Request, status int, v views.InstructorSetup) {
	v.Chrome = s.chrome(r, tr(langOf(r))("acct.join.title"))
	v.Action = "/instructor/invite"
	w.Header().Set("Cache-Control", "no-store")
	s.render(w, r, status, views.InviteView(v))
}
