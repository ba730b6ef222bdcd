package lti

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
)

// Launch is a verified LTI message from a platform: a resource link
// launch or a deep-linking request.
type Launch struct {
	Platform     Platform
	MessageType  string // MsgResourceLink or MsgDeepLinking
	DeploymentID string
	Subject      string // sub: the platform's stable user id
	Name         string // name, or given + family name ("" when the platform sends none)
	Email        string
	Roles        []string
	Context      Context
	ResourceLink ResourceLink // resource link launches only
	TargetLink   string       // target_link_uri
	Custom       map[string]string
	AGS          *AGSEndpoint      // when the platform offers grade services for this link
	NRPS         *NRPSEndpoint     // when the platform offers the course's roster
	DeepLink     *DeepLinkSettings // deep-linking requests only
	Expires      time.Time         // the id_token's exp
}

// Context is the LMS course the launch comes from (LTI Core §5.4.1).
type Context struct {
	ID    string `json:"id"`
	Label string `json:"label"`
	Title string `json:"title"`
}

// ResourceLink is the placement in the course that was launched.
type ResourceLink struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

// AGSEndpoint is the grade services claim (AGS §3.1).
type AGSEndpoint struct {
	Scope     []string `json:"scope"`
	LineItems string   `json:"lineitems"`
	LineItem  string   `json:"lineitem"`
}

// CanScore reports whether the tool may post scores to LineItem.
func (a *AGSEndpoint) CanScore() bool {
	return a != nil && a.LineItem != "" && slices.Contains(a.Scope, ScopeScore)
}

// DeepLinkSettings is the deep-linking request's settings (DL §4.4.1).
type DeepLinkSettings struct {
	ReturnURL      string   `json:"deep_link_return_url"`
	AcceptTypes    []string `json:"accept_types"`
	AcceptMultiple bool     `json:"accept_multiple"`
	AcceptLineItem *bool    `json:"accept_lineitem"`
	Data           string   `json:"data"`
	Title          string   `json:"title"`
}

// claims is the id_token payload the tool reads.
type claims struct {
	Issuer       string            `json:"iss"`
	Azp          string            `json:"azp"`
	IssuedAt     *json.Number      `json:"iat"`
	Name         string            `json:"name"`
	GivenName    string            `json:"given_name"`
	FamilyName   string            `json:"family_name"`
	Email        string            `json:"email"`
	MessageType  string            `json:"https://purl.imsglobal.org/spec/lti/claim/message_type"`
	Version      string            `json:"https://purl.imsglobal.org/spec/lti/claim/version"`
	DeploymentID string            `json:"https://purl.imsglobal.org/spec/lti/claim/deployment_id"`
	TargetLink   string            `json:"https://purl.imsglobal.org/spec/lti/claim/target_link_uri"`
	ResourceLink *ResourceLink     `json:"https://purl.imsglobal.org/spec/lti/claim/resource_link"`
	Roles        *[]string         `json:"https://purl.imsglobal.org/spec/lti/claim/roles"`
	Context      *Context          `json:"https://purl.imsglobal.org/spec/lti/claim/context"`
	Custom       map[string]any    `json:"https://purl.imsglobal.org/spec/lti/claim/custom"`
	AGS          *AGSEndpoint      `json:"https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"`
	NRPS         *NRPSEndpoint     `json:"https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"`
	DeepLink     *DeepLinkSettings `json:"https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"`
}

// Launch verifies the launch the platform posted (form fields state and
// id_token) and returns what it says. Refusals are *Error with a Kind.
//
// Checked, in order: the state is one this tool issued, unused and
// unexpired (taken: single use); the token is a JWS signed RS256 by a key
// of the platform's JWKS (go-oidc; alg none and HMAC are refused before
// any key is looked at); iss is the platform's, aud holds our client id
// and azp, when present or when aud has several values, is our client
// id; exp has not passed and iat is not in the future (Skew either way);
// the nonce is the state's and was not used before; the deployment id is
// registered; version 1.3.0; a message type we handle with its required
// claims (sub, roles, resource_link.id or deep_linking_settings).
func (t *Tool) Launch(ctx context.Context, state, idToken string) (*Launch, error) {
	t.init()
	if state == "" || idToken == "" {
		return nil, refuse(KindRequest, "the launch lacks state or id_token")
	}
	if len(idToken) > 64<<10 {
		return nil, refuse(KindRequest, "id_token longer than 64 KiB")
	}
	now := t.Now()
	st, err := t.Registry.TakeLoginState(ctx, state, now)
	switch {
	case errors.Is(err, ErrNoState):
		return nil, refuse(KindState, "%w", err)
	case errors.Is(err, ErrStateUsed):
		return nil, refuse(KindStateUsed, "%w", err)
	case errors.Is(err, ErrStateExpired):
		return nil, refuse(KindStateExpired, "%w", err)
	case err != nil:
		return nil, err
	}
	p, err := t.Registry.PlatformByID(ctx, st.PlatformID)
	if errors.Is(err, ErrNoPlatform) {
		return nil, refuse(KindPlatform, "the platform was removed during the login")
	}
	if err != nil {
		return nil, err
	}
	v := oidc.NewVerifier(p.Issuer, t.keySet(p.JWKSURL), &oidc.Config{
		ClientID:             p.ClientID,
		SupportedSigningAlgs: []string{oidc.RS256},
		// go-oidc compares exp with Now exactly; an earlier Now is the leeway.
		Now: func() time.Time { return now.Add(-Skew) },
	})
	tok, err := v.Verify(ctx, idToken)
	if err != nil {
		return nil, classify(err, idToken, p)
	}
	var c claims
	if err := tok.Claims(&c); err != nil {
		return nil, refuse(KindClaims, "claims: %v", err)
	}
	if len(tok.Audience) > 1 || c.Azp != "" {
		if c.Azp != p.ClientID {
			return nil, refuse(KindAudience, "azp %q is not our client id", c.Azp)
		}
	}
	if c.IssuedAt == nil {
		return nil, refuse(KindClaims, "no iat")
	}
	if tok.IssuedAt.After(now.Add(Skew)) {
		return nil, refuse(KindExpired, "iat %s is in the future", tok.IssuedAt.UTC().Format(time.RFC3339))
	}
	if tok.Nonce == "" || subtle.ConstantTimeCompare([]byte(tok.Nonce), []byte(st.Nonce)) != 1 {
		return nil, refuse(KindNonce, "the nonce is not the one this login sent")
	}
	if err := t.Registry.UseNonce(ctx, p.ID, tok.Nonce, tok.Expiry.Add(Skew)); errors.Is(err, ErrNonceUsed) {
		return nil, refuse(KindReplay, "%w", err)
	} else if err != nil {
		return nil, err
	}
	if !p.HasDeployment(c.DeploymentID) {
		return nil, refuse(KindDeployment, "deployment %q is not registered for %s", c.DeploymentID, p.Issuer)
	}
	if c.Version != Version {
		return nil, refuse(KindClaims, "version %q, not %s", c.Version, Version)
	}
	if tok.Subject == "" {
		return nil, refuse(KindClaims, "no sub: anonymous launches cannot be graded or recognised")
	}
	if c.Roles == nil {
		return nil, refuse(KindClaims, "no roles claim")
	}
	l := &Launch{
		Platform: p, MessageType: c.MessageType, DeploymentID: c.DeploymentID, Subject: tok.Subject,
		Name: strings.TrimSpace(c.Name), Email: c.Email, Roles: *c.Roles, TargetLink: c.TargetLink,
		AGS: c.AGS, NRPS: c.NRPS, Expires: tok.Expiry, Custom: map[string]string{},
	}
	if l.Name == "" {
		l.Name = strings.TrimSpace(c.GivenName + " " + c.FamilyName)
	}
	if c.Context != nil {
		l.Context = *c.Context
	}
	for k, v := range c.Custom {
		if s, ok := v.(string); ok {
			l.Custom[k] = s
		}
	}
	switch c.MessageType {
	case MsgResourceLink:
		if c.ResourceLink == nil || c.ResourceLink.ID == "" {
			return nil, refuse(KindClaims, "no resource_link.id")
		}
		l.ResourceLink = *c.ResourceLink
	case MsgDeepLinking:
		if c.DeepLink == nil || c.DeepLink.ReturnURL == "" {
			return nil, refuse(KindClaims, "no deep_linking_settings.deep_link_return_url")
		}
		if err := checkURL(c.DeepLink.ReturnURL); err != nil {
			return nil, refuse(KindClaims, "deep_link_return_url: %v", err)
		}
		l.DeepLink = c.DeepLink
	default:
		return nil, refuse(KindClaims, "message type %q is not one this tool handles", c.MessageType)
	}
	return l, nil
}

// classify turns go-oidc's refusal into a Kind. The token is read without
// verification only to choose the message: it is refused either way.
func classify(err error, idToken string, p Platform) error {
	var exp *oidc.TokenExpiredError
	if errors.As(err, &exp) {
		return &Error{Kind: KindExpired, Err: err}
	}
	jws, perr := jose.ParseSigned(idToken, []jose.SignatureAlgorithm{jose.RS256})
	if perr != nil {
		return &Error{Kind: KindSignature, Err: err}
	}
	var c struct {
		Iss string          `json:"iss"`
		Aud json.RawMessage `json:"aud"`
	}
	if json.Unmarshal(jws.UnsafePayloadWithoutVerification(), &c) == nil {
		var auds []string
		if json.Unmarshal(c.Aud, &auds) != nil {
			var one string
			json.Unmarshal(c.Aud, &one)
			auds = []string{one}
		}
		if c.Iss != p.Issuer || !slices.Contains(auds, p.ClientID) {
			return &Error{Kind: KindAudience, Err: err}
		}
	}
	return &Error{Kind: KindSignature, Err: err}
}

// Role tells the tool's roles apart (LTI Core §A.2: context roles, with
// the deprecated short names some platforms still send).
type Role int

// The roles a launch maps to.
const (
	RoleIsLearner Role = iota
	RoleIsTA
	RoleIsInstructor
)

// Role is the launch's role in its context (the course launched), from
// the context roles only: instructor (instructor, content developer,
// administrator of the course), TA (the Instructor#TeachingAssistant
// sub-role, or TeachingAssistant), otherwise learner. Institution and
// system roles (LTI Core §A.2.1, §A.2.2: "system#Administrator" is the
// LMS's site admin) say nothing about this course: a student who also
// administers the site is a learner here.
func (l *Launch) Role() Role {
	r := RoleIsLearner
	for _, s := range l.Roles {
		switch s {
		case RoleTA, "TeachingAssistant", "http://purl.imsglobal.org/vocab/lis/v2/membership#TeachingAssistant":
			return RoleIsTA
		case RoleInstructor, "Instructor",
			"http://purl.imsglobal.org/vocab/lis/v2/membership#ContentDeveloper",
			"http://purl.imsglobal.org/vocab/lis/v2/membership#Administrator":
			r = RoleIsInstructor
		}
	}
	return r
}
