package instructor

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/rdmalab/rdmalab/lti"
	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/views"
)

// /instructor/lti: the tool's URLs to type into an LMS, the registered
// platforms (add, remove: the same as `labserver lti add|remove`), and
// the scores the LMS has not taken yet with why (instructors only).

// outboxShown bounds the outbox rows on the page.
const outboxShown = 100

// ToolURLs are the values an LMS asks for when the lab is registered, as
// (what the LMS calls it, the URL), given the lab's base URL.
func ToolURLs(base string, t func(string) string) []views.Option {
	return []views.Option{
		{Label: t("lti.u.tool"), Value: base + "/"},
		{Label: t("lti.u.login"), Value: base + "/lti/login"},
		{Label: t("lti.u.launch"), Value: base + "/lti/launch"},
		{Label: t("lti.u.deeplink"), Value: base + "/lti/launch"},
		{Label: t("lti.u.jwks"), Value: base + "/lti/jwks"},
	}
}

func (s *Area) renderLTIAdmin(w http.ResponseWriter, r *http.Request, status int, errMsg, notice string) {
	t := s.tr(page.LangOf(r))
	v := views.LTIAdmin{Chrome: s.Chrome(r, t("lti.admin.title")), Error: errMsg, Notice: notice}
	if s.cfg.LTI == nil {
		v.Off = true
		s.Render(w, r, status, views.LTIAdminView(v))
		return
	}
	v.ToolURLs = ToolURLs(s.cfg.LTIBase(r), t)
	ps, err := s.cfg.Store.LTIPlatforms(r.Context())
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	for _, p := range ps {
		id := strconv.FormatInt(p.ID, 10)
		v.Platforms = append(v.Platforms, views.LTIPlatformRow{ID: id, Issuer: p.Issuer, ClientID: p.ClientID,
			Deployments: strings.Join(p.Deployments, " "), AuthURL: p.AuthURL, TokenURL: p.TokenURL, JWKSURL: p.JWKSURL,
			RemoveAction: "/instructor/lti/" + id + "/remove"})
	}
	rows, err := s.cfg.Store.LTIOutbox(r.Context(), outboxShown+1)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	if len(rows) > outboxShown {
		rows, v.OutboxMore = rows[:outboxShown], true
	}
	for _, o := range rows {
		v.Outbox = append(v.Outbox, views.LTIOutboxRow{Issuer: o.Issuer, Learner: o.Learner, LineItem: o.LineItem,
			Score:    fmt.Sprintf("%g / %g", o.Score.ScoreGiven, o.Score.ScoreMaximum),
			Attempts: strconv.Itoa(o.Attempts), LastError: o.LastError, Next: localTime(o.Next)})
	}
	w.Header().Set("Cache-Control", "no-store")
	s.Render(w, r, status, views.LTIAdminView(v))
}

// ltiAdmin is GET /instructor/lti.
func (s *Area) ltiAdmin(w http.ResponseWriter, r *http.Request) {
	s.renderLTIAdmin(w, r, http.StatusOK, "", "")
}

// ltiPlatformAdd is POST /instructor/lti.
func (s *Area) ltiPlatformAdd(w http.ResponseWriter, r *http.Request) {
	if s.cfg.LTI == nil {
		s.renderLTIAdmin(w, r, http.StatusNotFound, "", "")
		return
	}
	f := func(k string) string { return strings.TrimSpace(r.PostFormValue(k)) }
	p := lti.Platform{Issuer: f("issuer"), ClientID: f("client_id"), AuthURL: f("auth_url"), TokenURL: f("token_url"),
		JWKSURL: f("jwks_url"), Deployments: strings.Fields(strings.ReplaceAll(f("deployments"), ",", " ")),
		FrameOrigins: strings.Fields(strings.ReplaceAll(f("frame_origins"), ",", " "))}
	t := s.tr(page.LangOf(r))
	var fe *lti.FieldError
	if err := p.Check(); errors.As(err, &fe) {
		// The form's own label, not the CLI's flag.
		s.renderLTIAdmin(w, r, http.StatusBadRequest, t(ltiFieldLabel[fe.Field])+t("lti.colon")+fe.Message, "")
		return
	}
	_, err := s.cfg.Store.AddLTIPlatform(r.Context(), p)
	var ve *store.ValidationError
	if errors.As(err, &ve) {
		s.renderLTIAdmin(w, r, http.StatusBadRequest, ve.Message, "")
		return
	}
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	s.platformsChanged()
	http.Redirect(w, r, "/instructor/lti", http.StatusSeeOther)
}

// ltiFieldLabel is the form label of each field lti.Platform.Check names.
var ltiFieldLabel = map[string]string{"issuer": "lti.f.issuer", "client-id": "lti.f.client", "deployment": "lti.f.deployments",
	"auth-url": "lti.f.auth", "token-url": "lti.f.token", "jwks-url": "lti.f.jwks", "frame-origin": "lti.f.frames"}

// ltiPlatformRemove is POST /instructor/lti/{id}/remove.
func (s *Area) ltiPlatformRemove(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	err := s.cfg.Store.RemoveLTIPlatform(r.Context(), id)
	if errors.Is(err, lti.ErrNoPlatform) {
		s.NotFound(w, r)
		return
	}
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	s.platformsChanged()
	http.Redirect(w, r, "/instructor/lti", http.StatusSeeOther)
}

// platformsChanged tells the server an LTI platform was added or removed.
func (s *Area) platformsChanged() {
	if s.cfg.PlatformsChanged != nil {
		s.cfg.PlatformsChanged()
	}
}
