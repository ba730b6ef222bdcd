package lti

import (
	"context"
	"errors"
	"net/url"
)

// LoginRequest is a platform's third-party login initiation (LTI Core
// §4.1, OIDC third-party initiated login): GET or POST parameters.
type LoginRequest struct {
	Issuer        string // iss
	LoginHint     string // login_hint
	MessageHint   string // lti_message_hint (opaque, sent back as is)
	TargetLinkURI string // target_link_uri
	ClientID      string // client_id (optional in the spec)
	DeploymentID  string // lti_deployment_id (optional)
}

// LoginRequestOf reads the parameters from a parsed form (query or body).
func LoginRequestOf(v url.Values) LoginRequest {
	return LoginRequest{
		Issuer: v.Get("iss"), LoginHint: v.Get("login_hint"), MessageHint: v.Get("lti_message_hint"),
		TargetLinkURI: v.Get("target_link_uri"), ClientID: v.Get("client_id"), DeploymentID: v.Get("lti_deployment_id"),
	}
}

// Login answers a login initiation: it stores a fresh state and nonce
// (single use, StateLife) and returns the platform's authentication URL
// to redirect the browser to, and the state. redirectURI is the tool's
// launch URL, as registered with the platform; the platform posts the
// id_token there (response_mode form_post).
//
// The caller binds the state to the browser (OIDC Core §3.1.2.1, the
// Security Framework §5.1.1.1: "bound to the user agent"): the web layer
// sets a cookie named StateCookie(state) on this answer and refuses a
// launch whose browser does not send it back, so a token the platform
// issued to someone else cannot be posted from a victim's browser. The
// id_token is bound to the state by its nonce, and both are single use.
func (t *Tool) Login(ctx context.Context, req LoginRequest, redirectURI string) (to, state string, err error) {
	t.init()
	if req.Issuer == "" || req.LoginHint == "" || req.TargetLinkURI == "" {
		return "", "", refuse(KindRequest, "the login initiation lacks iss, login_hint or target_link_uri")
	}
	if len(req.LoginHint) > 4096 || len(req.MessageHint) > 4096 || len(req.TargetLinkURI) > 2048 {
		return "", "", refuse(KindRequest, "login initiation parameters too long")
	}
	p, err := t.Registry.PlatformFor(ctx, req.Issuer, req.ClientID)
	if errors.Is(err, ErrNoPlatform) {
		return "", "", refuse(KindPlatform, "issuer %q with client id %q is not registered", req.Issuer, req.ClientID)
	}
	if err != nil {
		return "", "", err
	}
	if req.DeploymentID != "" && !p.HasDeployment(req.DeploymentID) {
		return "", "", refuse(KindDeployment, "deployment %q of %s is not registered", req.DeploymentID, p.Issuer)
	}
	st := LoginState{State: randomID(), Nonce: randomID(), PlatformID: p.ID, Expires: t.Now().Add(StateLife)}
	if err := t.Registry.SaveLoginState(ctx, st); err != nil {
		return "", "", err
	}
	u, err := url.Parse(p.AuthURL)
	if err != nil {
		return "", "", refuse(KindPlatform, "auth URL: %v", err)
	}
	q := u.Query()
	q.Set("scope", "openid")
	q.Set("response_type", "id_token")
	q.Set("response_mode", "form_post")
	q.Set("prompt", "none")
	q.Set("client_id", p.ClientID)
	q.Set("redirect_uri", redirectURI)
	q.Set("login_hint", req.LoginHint)
	if req.MessageHint != "" {
		q.Set("lti_message_hint", req.MessageHint)
	}
	q.Set("state", st.State)
	q.Set("nonce", st.Nonce)
	u.RawQuery = q.Encode()
	return u.String(), st.State, nil
}

// StateCookie is the name of the cookie that binds a login state to the
// browser that started it: one per state, so two launches under way in
// one browser (two tabs) do not undo each other. The state is URL-safe
// base64, which a cookie name may hold.
func StateCookie(state string) string { return "lti_state_" + state }
