package instructor

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/views"
)

// Roles (issue 29 item 7). An instructor account may do everything; a TA
// account sees the classes it is assigned to (dashboard, gradebook, CSV
// exports, roster with its codes, the answer key) and changes nothing but
// its own password: no accounts, no invitations, no classes, no rosters,
// no drafts. Least rights are enforced here, on the server: routes.go
// wraps every changing route and the drafts in instructorsOnly, and
// requestScope/taCohort keep a TA inside its classes.

// instructorsOnly refuses TA accounts with 403 and a page saying why.
func (s *Area) instructorsOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if in, _ := currentInstructor(r); in.TA() {
			s.log.Warn("TA refused", "user", in.Username, "method", r.Method, "path", r.URL.Path)
			s.taRefused(w, r, "role.ta.refused")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Area) taRefused(w http.ResponseWriter, r *http.Request, key string) {
	t := s.tr(page.LangOf(r))
	s.Render(w, r, http.StatusForbidden, views.ErrorView(views.ErrorPage{
		Chrome: s.Chrome(r, t("role.ta.title")), Status: http.StatusForbidden,
		Heading: t("role.ta.title"), Message: t(key),
	}))
}

// taCohorts is the classes a TA may see (nil for an instructor: all).
func (s *Area) taCohorts(r *http.Request) ([]int64, bool, error) {
	in, _ := currentInstructor(r)
	if !in.TA() {
		return nil, false, nil
	}
	ids, err := s.cfg.Store.TACohorts(r.Context(), in.ID)
	return ids, true, err
}

// taScope applies a TA's classes to a page's ?class=ID: no class (all
// learners) sends a TA to their first class; another class is 404; a TA
// with no class gets 403 saying so. ok false: the answer was sent.
func (s *Area) taScope(w http.ResponseWriter, r *http.Request, cohort int64) bool {
	ids, ta, err := s.taCohorts(r)
	if err != nil {
		s.InternalError(w, r, err)
		return false
	}
	switch {
	case !ta:
		return true
	case len(ids) == 0:
		s.taRefused(w, r, "role.ta.noclass")
		return false
	case cohort == 0:
		q := r.URL.Query()
		q.Set("class", strconv.FormatInt(ids[0], 10))
		http.Redirect(w, r, r.URL.Path+"?"+q.Encode(), http.StatusSeeOther)
		return false
	case !slices.Contains(ids, cohort):
		s.NotFound(w, r)
		return false
	}
	return true
}

// invitationsShow is GET /instructor/invitations[?link=TOKEN]: the pending
// invitations (who made each, role, class, expiry with its zone), a form
// for a new one, and — after that form — its link, shown by this GET page
// for as long as it is pending (a refresh shows the same link, it does not
// make another).
func (s *Area) invitationsShow(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	lang := page.LangOf(r)
	t := s.tr(lang)
	v := views.Invitations{Chrome: s.Chrome(r, t("inv.title"))}
	if tok := r.URL.Query().Get("link"); tok != "" {
		inv, err := s.cfg.Store.InviteByToken(ctx, tok)
		switch {
		case errors.Is(err, store.ErrBadInvite):
			v.Gone = true
		case err != nil:
			s.InternalError(w, r, err)
			return
		default:
			v.Link = page.BaseURL(r) + "/instructor/invite?token=" + url.QueryEscape(tok)
			v.LinkExpires = localTime(inv.ExpiresAt)
			v.LinkRole = s.roleLabel(lang, inv.Role, inv.Cohort)
		}
	}
	list, err := s.cfg.Store.Invites(ctx)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	for _, inv := range list {
		v.Pending = append(v.Pending, views.InviteRow{By: inv.By, Role: s.roleLabel(lang, inv.Role, inv.Cohort),
			Created: localTime(inv.CreatedAt), Expires: localTime(inv.ExpiresAt),
			RevokeAction: "/instructor/invitations/" + strconv.FormatInt(inv.ID, 10) + "/revoke"})
	}
	classes, err := s.cfg.Store.Cohorts(ctx, false)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	for _, c := range classes {
		v.Classes = append(v.Classes, views.Option{Value: strconv.FormatInt(c.ID, 10), Label: c.Name})
	}
	v.Revoked = r.URL.Query().Has("revoked")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer") // the link is in this page's URL
	s.Render(w, r, http.StatusOK, views.InvitationsView(v))
}

// roleLabel names a role for the page ("TA · class" for a TA's invitation).
func (s *Area) roleLabel(lang, role, class string) string {
	if role == store.RoleTA {
		if class == "" {
			return s.tr(lang)("role.ta")
		}
		return s.tr(lang)("role.ta") + " · " + class
	}
	return s.tr(lang)("role.instructor")
}

// invitationCreate is POST /instructor/invitations (fields role, class)
// and the account page's POST /instructor/account/invite: a one-time link
// (only its hash is stored), then the GET page that shows it.
func (s *Area) invitationCreate(w http.ResponseWriter, r *http.Request) {
	if !s.ParseForm(w, r) {
		return
	}
	in, _ := currentInstructor(r)
	role := r.PostFormValue("role")
	if role == "" {
		role = store.RoleInstructor
	}
	cohort, _ := strconv.ParseInt(r.PostFormValue("class"), 10, 64)
	token, expires, err := s.cfg.Store.CreateRoleInvite(r.Context(), in.ID, inviteTTL, role, cohort)
	var ve *store.ValidationError
	if errors.As(err, &ve) {
		s.ErrorPage(w, r, http.StatusUnprocessableEntity)
		return
	}
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	s.log.Info("invitation created", "by", in.Username, "role", role, "class", cohort, "expires", expires)
	http.Redirect(w, r, "/instructor/invitations?link="+url.QueryEscape(token), http.StatusSeeOther)
}

// invitationRevoke is POST /instructor/invitations/{id}/revoke.
func (s *Area) invitationRevoke(w http.ResponseWriter, r *http.Request) {
	if !s.ParseForm(w, r) {
		return
	}
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err == nil {
		err = s.cfg.Store.RevokeInvite(r.Context(), id)
	}
	if errors.Is(err, store.ErrBadInvite) || errors.Is(err, strconv.ErrSyntax) || errors.Is(err, strconv.ErrRange) {
		s.NotFound(w, r)
		return
	}
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	in, _ := currentInstructor(r)
	s.log.Info("invitation revoked", "by", in.Username, "id", id)
	http.Redirect(w, r, "/instructor/invitations?revoked=1", http.StatusSeeOther)
}

// cohortTA is POST /instructor/classes/{id}/tas (fields ta: an account id,
// on: 1 to assign, 0 to unassign).
func (s *Area) cohortTA(w http.ResponseWriter, r *http.Request) {
	c, ok := s.rosterCohort(w, r)
	if !ok || !s.ParseForm(w, r) {
		return
	}
	ta, _ := strconv.ParseInt(r.PostFormValue("ta"), 10, 64)
	err := s.cfg.Store.SetCohortTA(r.Context(), c.ID, ta, r.PostFormValue("on") != "0")
	if errors.Is(err, store.ErrNoInstructor) {
		s.NotFound(w, r)
		return
	}
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	http.Redirect(w, r, "/instructor/classes", http.StatusSeeOther)
}
