// Package ltitest is an LTI 1.3 platform for tests, written from the IMS
// specifications (LTI Core 1.3, Security Framework 1.0, Deep Linking 2.0,
// Assignment and Grade Services 2.0) and served by a real HTTP server on
// loopback: its RSA keys and JWKS, an OIDC authentication endpoint that
// signs id_tokens and answers with an auto-submitting form_post page, a
// token endpoint that checks the tool's client assertion against the
// tool's own JWKS URL (tokens carry the scopes granted), AGS line items
// with a scores endpoint recording what it receives, an NRPS memberships
// service (the course's roster, paged), and a deep-linking return
// endpoint that verifies the tool's response JWT. Roles are per launch
// (Message.Roles), so one user can be a TA of one course and a learner of
// another. No LMS runs here; this is the LMS of the tests.
package ltitest

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/rdmalab/rdmalab/lti"
)

// Message is what the next launch of a login hint carries.
type Message struct {
	Type           string // lti.MsgResourceLink (default) or lti.MsgDeepLinking
	Sub            string
	Name           string
	Email          string   // the email claim ("" for none)
	Roles          []string // default: Learner
	ContextID      string
	ContextTitle   string
	ResourceLinkID string // default: "link-1"
	TargetLink     string // default: the login's target_link_uri
	Custom         map[string]string
	LineItem       string // AGS: the link's line item (NewLineItem); "" for an ungraded link
}

// Score is a score the scores endpoint received.
type Score struct {
	LineItem    string
	ContentType string
	Score       lti.Score
}

// DeepLink is a verified deep-linking response.
type DeepLink struct {
	Claims map[string]any
	Items  []map[string]any
}

// Platform is the test LMS. Forge changes the next id_token.
type Platform struct {
	Server *httptest.Server
	// URL is the platform's base URL: the server's, or the same port
	// under another host name (UseHost).
	URL          string
	ClientID     string
	DeploymentID string

	mu       sync.Mutex
	toolJWKS string                      // the tool's JWKS URL (SetToolJWKS)
	tamper   func(claims map[string]any) // the next id_token's knobs (Forge)
	signWith *rsa.PrivateKey
	algNone  bool

	key       *rsa.PrivateKey
	kid       string
	oldKeys   []jose.JSONWebKey // rotated out, still published
	messages  map[string]Message
	scores    []Score
	deepLinks []DeepLink
	tokens    map[string]token
	members   map[string][]lti.Member // NRPS: by context id
	pageSize  int                     // NRPS: members per page (0: all on one)
	lineItems map[string]string       // id → label
	tokenErr  int                     // answer the token endpoint with this status (0: normally)
	nextItem  int
}

// New starts a platform on loopback; Close stops it.
func New() *Platform {
	p := &Platform{ClientID: "rdmalab-tool", DeploymentID: "dep-1", messages: map[string]Message{},
		tokens: map[string]token{}, lineItems: map[string]string{}, members: map[string][]lti.Member{}}
	p.RotateKey()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /jwks", p.jwks)
	mux.HandleFunc("GET /auth", p.auth)
	mux.HandleFunc("POST /auth", p.auth)
	mux.HandleFunc("POST /token", p.token)
	mux.HandleFunc("POST /lineitems/{id}/scores", p.scoresEndpoint)
	mux.HandleFunc("POST /deeplink/return", p.deepLinkReturn)
	mux.HandleFunc("GET /nrps/{context}", p.membershipsEndpoint)
	p.Server = httptest.NewServer(mux)
	p.URL = p.Server.URL
	return p
}

// UseHost makes the platform's URLs name host (e.g. "localhost") instead
// of 127.0.0.1, before it is registered: a browser then sees the platform
// and a tool on 127.0.0.1 as different sites, as an LMS and a tool are.
func (p *Platform) UseHost(host string) {
	u, _ := url.Parse(p.Server.URL)
	p.URL = "http://" + host + ":" + u.Port()
}

// Forge is what the next id_token does wrong: Tamper edits its claims
// before signing, SignWith signs it with another key (a forger's) under
// the platform's kid, AlgNone sends it unsigned (alg "none").
type Forge struct {
	Tamper   func(claims map[string]any)
	SignWith *rsa.PrivateKey
	AlgNone  bool
}

// Forge arms f for the next id_token only.
func (p *Platform) Forge(f Forge) {
	p.mu.Lock()
	p.tamper, p.signWith, p.algNone = f.Tamper, f.SignWith, f.AlgNone
	p.mu.Unlock()
}

// SetToolJWKS tells the platform the tool's JWKS URL: the token and
// deep-linking endpoints verify the tool's JWTs against it.
func (p *Platform) SetToolJWKS(u string) {
	p.mu.Lock()
	p.toolJWKS = u
	p.mu.Unlock()
}

// Close stops the server.
func (p *Platform) Close() { p.Server.Close() }

// Issuer is the platform's iss (its base URL).
func (p *Platform) Issuer() string { return p.URL }

// Registration is what an admin types into `labserver lti add`.
func (p *Platform) Registration() lti.Platform {
	u := p.URL
	return lti.Platform{Issuer: u, ClientID: p.ClientID, AuthURL: u + "/auth", TokenURL: u + "/token",
		JWKSURL: u + "/jwks", Deployments: []string{p.DeploymentID}}
}

// RotateKey makes a new signing key with a new kid; the old one stays
// published (as platforms do during a rotation).
func (p *Platform) RotateKey() {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.key != nil {
		p.oldKeys = append(p.oldKeys, jose.JSONWebKey{Key: &p.key.PublicKey, KeyID: p.kid, Algorithm: "RS256", Use: "sig"})
	}
	p.key, p.kid = k, randomID()
}

// KeyID is the current signing key's kid.
func (p *Platform) KeyID() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.kid
}

// Prepare registers the message the next login with the returned
// login_hint launches.
func (p *Platform) Prepare(m Message) string {
	hint := randomID()
	p.mu.Lock()
	p.messages[hint] = m
	p.mu.Unlock()
	return hint
}

// NewLineItem makes a gradebook column and returns its URL.
func (p *Platform) NewLineItem(label string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nextItem++
	id := fmt.Sprint(p.nextItem)
	p.lineItems[id] = label
	return p.URL + "/lineitems/" + id
}

// Scores returns what the scores endpoint received, in order.
func (p *Platform) Scores() []Score {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Score(nil), p.scores...)
}

// DeepLinks returns the verified deep-linking responses, in order.
func (p *Platform) DeepLinks() []DeepLink {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]DeepLink(nil), p.deepLinks...)
}

// SetMembers is the course's roster the memberships service answers
// (NRPS); pageSize members a page (0: one page).
func (p *Platform) SetMembers(contextID string, members []lti.Member, pageSize int) {
	p.mu.Lock()
	p.members[contextID], p.pageSize = members, pageSize
	p.mu.Unlock()
}

// token is an access token the token endpoint issued, with its scopes.
type token struct {
	expires time.Time
	scopes  []string
}

// FailTokens makes the token endpoint answer status (0: work again).
func (p *Platform) FailTokens(status int) {
	p.mu.Lock()
	p.tokenErr = status
	p.mu.Unlock()
}

func (p *Platform) jwks(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	set := jose.JSONWebKeySet{Keys: append([]jose.JSONWebKey{{Key: &p.key.PublicKey, KeyID: p.kid, Algorithm: "RS256", Use: "sig"}}, p.oldKeys...)}
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(set)
}

// formPage is the form_post response (OAuth 2.0 Form Post Response Mode):
// the browser posts id_token and state to the tool by itself.
var formPage = template.Must(template.New("f").Parse(`<!doctype html>
<html><head><title>LMS</title></head><body onload="document.forms[0].submit()">
<form method="post" action="{{.Action}}">{{range $k, $v := .Fields}}<input type="hidden" name="{{$k}}" value="{{$v}}">{{end}}
<button type="submit">Continue</button></form></body></html>`))

// auth is the OIDC authentication endpoint (Security Framework §5.1.1.2):
// it checks the request the tool made, then signs the id_token.
func (p *Platform) auth(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	q := r.Form
	for k, want := range map[string]string{"scope": "openid", "response_type": "id_token", "response_mode": "form_post",
		"prompt": "none", "client_id": p.ClientID} {
		if q.Get(k) != want {
			http.Error(w, fmt.Sprintf("%s must be %q, is %q", k, want, q.Get(k)), http.StatusBadRequest)
			return
		}
	}
	if q.Get("state") == "" || q.Get("nonce") == "" || q.Get("redirect_uri") == "" {
		http.Error(w, "state, nonce and redirect_uri are required", http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	m, ok := p.messages[q.Get("login_hint")]
	p.mu.Unlock()
	if !ok {
		http.Error(w, "unknown login_hint", http.StatusBadRequest)
		return
	}
	tok, err := p.IDToken(m, q.Get("nonce"), q.Get("redirect_uri"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	formPage.Execute(w, map[string]any{"Action": q.Get("redirect_uri"),
		"Fields": map[string]string{"id_token": tok, "state": q.Get("state")}})
}

// Claims builds the id_token claims of m (LTI Core §5.3, §5.4; DL §4.4).
func (p *Platform) Claims(m Message, nonce, target string) map[string]any {
	now := time.Now()
	if m.Type == "" {
		m.Type = lti.MsgResourceLink
	}
	if m.Roles == nil {
		m.Roles = []string{lti.RoleLearner}
	}
	if m.TargetLink != "" {
		target = m.TargetLink
	}
	c := map[string]any{
		"iss": p.Issuer(), "aud": p.ClientID, "sub": m.Sub, "exp": now.Add(5 * time.Minute).Unix(), "iat": now.Unix(),
		"nonce": nonce, "azp": p.ClientID, "name": m.Name,
		lti.ClaimMessageType: m.Type, lti.ClaimVersion: lti.Version, lti.ClaimDeploymentID: p.DeploymentID,
		lti.ClaimTargetLink: target, lti.ClaimRoles: m.Roles,
	}
	if m.Email != "" {
		c["email"] = m.Email
	}
	if m.ContextID != "" {
		c[lti.ClaimContext] = map[string]any{"id": m.ContextID, "title": m.ContextTitle, "label": m.ContextID}
		c[lti.ClaimNRPS] = map[string]any{"context_memberships_url": p.URL + "/nrps/" + url.PathEscape(m.ContextID),
			"service_versions": []string{"2.0"}}
	}
	if m.Custom != nil {
		c[lti.ClaimCustom] = m.Custom
	}
	switch m.Type {
	case lti.MsgResourceLink:
		id := m.ResourceLinkID
		if id == "" {
			id = "link-1"
		}
		c[lti.ClaimResourceLink] = map[string]any{"id": id, "title": "RDMA"}
		if m.LineItem != "" {
			c[lti.ClaimAGS] = map[string]any{"scope": []string{lti.ScopeLineItem, lti.ScopeScore},
				"lineitems": p.URL + "/lineitems", "lineitem": m.LineItem}
		}
	case lti.MsgDeepLinking:
		c[lti.ClaimDLSettings] = map[string]any{"deep_link_return_url": p.URL + "/deeplink/return",
			"accept_types": []string{"ltiResourceLink"}, "accept_presentation_document_targets": []string{"iframe", "window"},
			"accept_multiple": false, "accept_lineitem": true, "data": "opaque-" + nonce[:4]}
	}
	return c
}

// IDToken signs m's claims as the platform would, applying the armed
// Forge once.
func (p *Platform) IDToken(m Message, nonce, target string) (string, error) {
	c := p.Claims(m, nonce, target)
	p.mu.Lock()
	tamper, with, none := p.tamper, p.signWith, p.algNone
	p.tamper, p.signWith, p.algNone = nil, nil, false
	key, kid := p.key, p.kid
	p.mu.Unlock()
	if tamper != nil {
		tamper(c)
	}
	if none {
		enc := base64.RawURLEncoding
		head, _ := json.Marshal(map[string]string{"alg": "none", "typ": "JWT", "kid": kid})
		body, _ := json.Marshal(c)
		return enc.EncodeToString(head) + "." + enc.EncodeToString(body) + ".", nil
	}
	if with != nil {
		key = with
	}
	return sign(key, kid, c)
}

func sign(key *rsa.PrivateKey, kid string, claims any) (string, error) {
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	if err != nil {
		return "", err
	}
	return jwt.Signed(s).Claims(claims).Serialize()
}

// toolKeys fetches the tool's JWKS, as a platform does (Security
// Framework §6.3: the tool's key set URL).
func (p *Platform) toolKeys() (jose.JSONWebKeySet, error) {
	var set jose.JSONWebKeySet
	p.mu.Lock()
	u := p.toolJWKS
	p.mu.Unlock()
	resp, err := http.Get(u)
	if err != nil {
		return set, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return set, fmt.Errorf("tool JWKS: %s", resp.Status)
	}
	err = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&set)
	return set, err
}

// verifyTool checks a JWT the tool signed against its JWKS and fills out.
func (p *Platform) verifyTool(raw string, out ...any) (jwt.Claims, error) {
	var std jwt.Claims
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		return std, err
	}
	if len(tok.Headers) != 1 || tok.Headers[0].KeyID == "" {
		return std, fmt.Errorf("no kid in the header")
	}
	set, err := p.toolKeys()
	if err != nil {
		return std, err
	}
	keys := set.Key(tok.Headers[0].KeyID)
	if len(keys) != 1 {
		return std, fmt.Errorf("kid %q not in the tool's JWKS", tok.Headers[0].KeyID)
	}
	return std, tok.Claims(keys[0].Key, append([]any{&std}, out...)...)
}

// token is the OAuth2 token endpoint: client credentials with an RFC 7523
// client assertion (Security Framework §4.1).
func (p *Platform) token(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	p.mu.Lock()
	fail := p.tokenErr
	p.mu.Unlock()
	if fail != 0 {
		http.Error(w, `{"error":"temporarily_unavailable"}`, fail)
		return
	}
	bad := func(msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]string{"error": "invalid_client", "error_description": msg})
	}
	if r.Form.Get("grant_type") != "client_credentials" {
		bad("grant_type must be client_credentials")
		return
	}
	if r.Form.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
		bad("client_assertion_type")
		return
	}
	std, err := p.verifyTool(r.Form.Get("client_assertion"))
	if err != nil {
		bad("client_assertion: " + err.Error())
		return
	}
	if err := std.ValidateWithLeeway(jwt.Expected{Issuer: p.ClientID, Subject: p.ClientID,
		AnyAudience: jwt.Audience{p.URL + "/token"}, Time: time.Now()}, time.Minute); err != nil {
		bad("client_assertion claims: " + err.Error())
		return
	}
	if std.ID == "" {
		bad("client_assertion without jti")
		return
	}
	var granted []string
	for _, sc := range strings.Fields(r.Form.Get("scope")) {
		if sc == lti.ScopeScore || sc == lti.ScopeNRPS || sc == lti.ScopeLineItem {
			granted = append(granted, sc)
		}
	}
	if len(granted) == 0 {
		bad("scope must include " + lti.ScopeScore + " or " + lti.ScopeNRPS)
		return
	}
	tok := randomID()
	p.mu.Lock()
	p.tokens[tok] = token{expires: time.Now().Add(time.Hour), scopes: granted}
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600, "scope": strings.Join(granted, " ")})
}

// authorized reports whether r carries an unexpired token granted scope.
func (p *Platform) authorized(r *http.Request, scope string) bool {
	auth := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	p.mu.Lock()
	tok, ok := p.tokens[auth]
	p.mu.Unlock()
	return ok && time.Now().Before(tok.expires) && slices.Contains(tok.scopes, scope)
}

// membershipsEndpoint is the context memberships service (NRPS §2): the
// course's members, pageSize at a time with a Link rel="next".
func (p *Platform) membershipsEndpoint(w http.ResponseWriter, r *http.Request) {
	if !p.authorized(r, lti.ScopeNRPS) {
		http.Error(w, "bad token", http.StatusUnauthorized)
		return
	}
	if !strings.Contains(r.Header.Get("Accept"), lti.MembershipMediaType) {
		http.Error(w, "accept "+lti.MembershipMediaType, http.StatusNotAcceptable)
		return
	}
	ctxID := r.PathValue("context")
	p.mu.Lock()
	all, size := p.members[ctxID], p.pageSize
	p.mu.Unlock()
	from, _ := strconv.Atoi(r.URL.Query().Get("from"))
	page := all[min(from, len(all)):]
	if size > 0 && len(page) > size {
		page = page[:size]
		w.Header().Set("Link", "<"+p.URL+"/nrps/"+url.PathEscape(ctxID)+"?from="+strconv.Itoa(from+size)+`>; rel="next"`)
	}
	w.Header().Set("Content-Type", lti.MembershipMediaType)
	json.NewEncoder(w).Encode(map[string]any{"id": p.URL + r.URL.RequestURI(),
		"context": map[string]string{"id": ctxID}, "members": page})
}

// scoresEndpoint is a line item's scores service (AGS §3.4).
func (p *Platform) scoresEndpoint(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	_, item := p.lineItems[r.PathValue("id")]
	p.mu.Unlock()
	if !p.authorized(r, lti.ScopeScore) {
		http.Error(w, "bad token", http.StatusUnauthorized)
		return
	}
	if !item {
		http.Error(w, "no such line item", http.StatusNotFound)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != lti.ScoreMediaType {
		http.Error(w, "content type "+ct, http.StatusUnsupportedMediaType)
		return
	}
	var s lti.Score
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&s); err != nil || s.UserID == "" || s.Timestamp.IsZero() ||
		s.ActivityProgress == "" || s.GradingProgress == "" {
		http.Error(w, "bad score", http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	p.scores = append(p.scores, Score{LineItem: p.URL + "/lineitems/" + r.PathValue("id"), ContentType: r.Header.Get("Content-Type"), Score: s})
	p.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// deepLinkReturn receives the LtiDeepLinkingResponse (DL §4.5) and keeps
// it once its signature and claims check out.
func (p *Platform) deepLinkReturn(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	var all map[string]any
	std, err := p.verifyTool(r.Form.Get("JWT"), &all)
	if err == nil {
		err = std.ValidateWithLeeway(jwt.Expected{Issuer: p.ClientID, AnyAudience: jwt.Audience{p.Issuer()}, Time: time.Now()}, time.Minute)
	}
	if err == nil && (all[lti.ClaimMessageType] != lti.MsgDeepLinkResponse || all[lti.ClaimVersion] != lti.Version ||
		all[lti.ClaimDeploymentID] != p.DeploymentID || all["nonce"] == nil) {
		err = fmt.Errorf("claims: %v", all)
	}
	if err != nil {
		http.Error(w, "deep linking response refused: "+err.Error(), http.StatusBadRequest)
		return
	}
	var items []map[string]any
	if raw, ok := all[lti.ClaimDLItems].([]any); ok {
		for _, it := range raw {
			if m, ok := it.(map[string]any); ok {
				items = append(items, m)
			}
		}
	}
	p.mu.Lock()
	p.deepLinks = append(p.deepLinks, DeepLink{Claims: all, Items: items})
	p.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprint(w, "<!doctype html><title>LMS</title><p id=placed>placed</p>")
}

// LoginQuery is the third-party login initiation the platform sends the
// tool for a prepared message (LTI Core §4.1.1); target is the link's URL,
// the id_token's target_link_uri unless the message names another.
func (p *Platform) LoginQuery(hint, target string) url.Values {
	p.mu.Lock()
	if m, ok := p.messages[hint]; ok && m.TargetLink == "" {
		m.TargetLink = target // the link's URL: the launch's target_link_uri
		p.messages[hint] = m
	}
	p.mu.Unlock()
	return url.Values{"iss": {p.Issuer()}, "login_hint": {hint}, "target_link_uri": {target},
		"client_id": {p.ClientID}, "lti_message_hint": {"mh-" + hint[:6]}, "lti_deployment_id": {p.DeploymentID}}
}

func randomID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
