// Package lti makes the lab an LTI 1.3 tool (IMS Learning Tools
// Interoperability Core 1.3, Deep Linking 2.0, Assignment and Grade
// Services 2.0): the OIDC third-party login, the launch's id_token checked
// against the platform's keys, the deep-linking response the tool signs,
// and scores posted to a platform's line items.
//
// The package speaks the protocol and nothing else: it keeps platforms,
// login states and used nonces through the Registry interface (the store
// implements it) and knows nothing of learners, classes or pages, which
// the web layer maps a Launch onto.
//
// JOSE is go-jose (signing our JWTs, our JWKS) and go-oidc (verifying a
// platform's id_token against its JWKS, fetched and cached, fetched again
// when a token names a key id the cache lacks: key rotation); no crypto is
// written here.
package lti

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Claim names of LTI 1.3 (Core §5) and its services.
const (
	ClaimMessageType  = "https://purl.imsglobal.org/spec/lti/claim/message_type"
	ClaimVersion      = "https://purl.imsglobal.org/spec/lti/claim/version"
	ClaimDeploymentID = "https://purl.imsglobal.org/spec/lti/claim/deployment_id"
	ClaimTargetLink   = "https://purl.imsglobal.org/spec/lti/claim/target_link_uri"
	ClaimResourceLink = "https://purl.imsglobal.org/spec/lti/claim/resource_link"
	ClaimRoles        = "https://purl.imsglobal.org/spec/lti/claim/roles"
	ClaimContext      = "https://purl.imsglobal.org/spec/lti/claim/context"
	ClaimCustom       = "https://purl.imsglobal.org/spec/lti/claim/custom"
	ClaimAGS          = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
	ClaimNRPS         = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
	ClaimDLSettings   = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
	ClaimDLItems      = "https://purl.imsglobal.org/spec/lti-dl/claim/content_items"
	ClaimDLData       = "https://purl.imsglobal.org/spec/lti-dl/claim/data"
	ClaimDLMessage    = "https://purl.imsglobal.org/spec/lti-dl/claim/msg"
)

// Message types and the one version this tool speaks.
const (
	MsgResourceLink     = "LtiResourceLinkRequest"
	MsgDeepLinking      = "LtiDeepLinkingRequest"
	MsgDeepLinkResponse = "LtiDeepLinkingResponse"
	Version             = "1.3.0"
)

// AGS scopes (Assignment and Grade Services 2.0 §3.1).
const (
	ScopeScore        = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
	ScopeLineItem     = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
	ScopeLineItemRead = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly"
	// ScopeNRPS reads a course's memberships (Names and Role Provisioning
	// Services 2.0 §2.1).
	ScopeNRPS = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
)

// Role URIs (LTI Core §A.2) the tool tells apart.
const (
	RoleLearner    = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
	RoleInstructor = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
	RoleTA         = "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"
)

// Skew is the clock difference between platform and tool that exp and iat
// tolerate (LTI Security Framework §5.1.3 asks for "a small leeway").
const Skew = time.Minute

// StateLife is how long a login state waits for its launch: the platform
// answers the authentication request at once, so a few minutes are plenty.
const StateLife = 5 * time.Minute

// Platform is a registered LMS: what the admin typed in `labserver lti add`.
type Platform struct {
	ID          int64
	Issuer      string   // the platform's iss (Moodle: its wwwroot; Canvas: https://canvas.instructure.com)
	ClientID    string   // the client id the platform gave this tool (the aud of its id_tokens)
	AuthURL     string   // OIDC authentication request URL
	TokenURL    string   // OAuth2 access token URL (AGS)
	JWKSURL     string   // the platform's public keyset URL
	Deployments []string // deployment ids accepted from this platform
	// FrameOrigins are the origins allowed to frame the lab's pages (CSP
	// frame-ancestors) besides those of Issuer and AuthURL; Canvas shows
	// the tool on the school's own domain.
	FrameOrigins []string
	CreatedAt    time.Time
}

// FieldError is a registration field Check refuses. Field is the
// field's key (issuer, client-id, auth-url, token-url, jwks-url,
// deployment, frame-origin): the CLI prints it as its flag, a web form
// as its label.
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// Check validates a registration before it is stored; a refusal is a
// *FieldError.
func (p Platform) Check() error {
	for _, u := range []struct{ name, v string }{{"issuer", p.Issuer}, {"auth-url", p.AuthURL}, {"token-url", p.TokenURL}, {"jwks-url", p.JWKSURL}} {
		if err := checkURL(u.v); err != nil {
			return &FieldError{u.name, err.Error()}
		}
	}
	for _, o := range p.FrameOrigins {
		if err := checkURL(o); err != nil {
			return &FieldError{"frame-origin", err.Error()}
		}
	}
	if strings.TrimSpace(p.ClientID) == "" || len(p.ClientID) > 255 {
		return &FieldError{"client-id", "1 to 255 characters"}
	}
	if len(p.Deployments) == 0 {
		return &FieldError{"deployment", "at least one deployment id"}
	}
	for _, d := range p.Deployments {
		if d == "" || len(d) > 255 {
			return &FieldError{"deployment", "1 to 255 characters each"}
		}
	}
	return nil
}

// HasDeployment reports whether id is one of the platform's deployments.
func (p Platform) HasDeployment(id string) bool { return slices.Contains(p.Deployments, id) }

// LoginState is what the tool remembers between the login initiation and
// the launch: the state it sent, the nonce the id_token must carry, and
// which platform it asked.
type LoginState struct {
	State      string
	Nonce      string
	PlatformID int64
	Expires    time.Time
}

// ErrNoState is a login state the registry does not hold: this tool
// never issued it (or so long ago that it is forgotten).
var ErrNoState = errors.New("lti: unknown login state")

// ErrStateUsed is a login state a launch has used already.
var ErrStateUsed = errors.New("lti: login state used already")

// ErrStateExpired is a login state whose launch came after StateLife.
var ErrStateExpired = errors.New("lti: login state expired")

// ErrNonceUsed is a nonce the registry has seen already.
var ErrNonceUsed = errors.New("lti: nonce already used")

// ErrNoPlatform is an issuer/client id pair nobody registered.
var ErrNoPlatform = errors.New("lti: no such platform")

// Registry keeps what the protocol must remember. Every method is safe
// for concurrent use.
type Registry interface {
	// PlatformFor finds the platform by issuer and, when clientID is not
	// empty, client id (the login initiation may lack client_id when the
	// issuer has one registration); ErrNoPlatform when none or ambiguous.
	PlatformFor(ctx context.Context, issuer, clientID string) (Platform, error)
	// PlatformByID reads one registration (ErrNoPlatform when gone).
	PlatformByID(ctx context.Context, id int64) (Platform, error)
	// SaveLoginState stores a state until it expires.
	SaveLoginState(ctx context.Context, s LoginState) error
	// TakeLoginState returns the state and marks it used (single use):
	// ErrNoState when it is unknown, ErrStateUsed when a launch took it
	// already, ErrStateExpired when it expired before now.
	TakeLoginState(ctx context.Context, state string, now time.Time) (LoginState, error)
	// UseNonce records a nonce of the platform until until; ErrNonceUsed
	// when it is recorded already.
	UseNonce(ctx context.Context, platformID int64, nonce string, until time.Time) error
}

// Kind says why a launch was refused, so the page can say it plainly.
type Kind string

// The kinds of refusal.
const (
	KindState        Kind = "state"         // a login state this tool never issued
	KindStateUsed    Kind = "state-used"    // the login state was used by a launch already (the form posted again)
	KindStateExpired Kind = "state-expired" // the launch came more than StateLife after its login
	KindBrowser      Kind = "browser"       // the login state is not the one this browser started (cookie missing or another)
	KindPlatform     Kind = "platform"      // issuer/client id not registered
	KindSignature    Kind = "signature"     // bad JWT, unknown key, wrong alg, bad signature
	KindAudience     Kind = "audience"      // aud/azp not this tool's client id, or wrong iss
	KindExpired      Kind = "expired"       // exp passed or iat in the future
	KindNonce        Kind = "nonce"         // the token's nonce is not the one its login sent (a token from another login)
	KindReplay       Kind = "replay"        // the token's nonce was used by a launch already
	KindDeployment   Kind = "deployment"    // deployment id not registered
	KindClaims       Kind = "claims"        // a required claim missing or wrong
	KindRequest      Kind = "request"       // the login or launch request itself is malformed
)

// Error is a refused login or launch.
type Error struct {
	Kind Kind
	Err  error
}

func (e *Error) Error() string { return "lti: " + string(e.Kind) + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

func refuse(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Err: fmt.Errorf(format, args...)}
}

// KindOf is err's Kind, or "" when err is not a refusal.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return ""
}
