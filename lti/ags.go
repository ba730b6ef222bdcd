package lti

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// Score is what the tool posts to a line item's scores service (AGS
// §3.4): a learner's score on the lesson or question the link places.
type Score struct {
	UserID           string    `json:"userId"` // the launch's sub
	ScoreGiven       float64   `json:"scoreGiven"`
	ScoreMaximum     float64   `json:"scoreMaximum"`
	ActivityProgress string    `json:"activityProgress"` // Initialized, Started, InProgress, Submitted, Completed
	GradingProgress  string    `json:"gradingProgress"`  // FullyGraded, Pending, PendingManual, Failed, NotReady
	Timestamp        time.Time `json:"timestamp"`        // when the score changed: a platform keeps the newest
}

// ScoreMediaType is the scores service's content type.
const ScoreMediaType = "application/vnd.ims.lis.v1.score+json"

// assertionType is RFC 7523's client assertion type.
const assertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// tokenCache keeps one access token per platform and scope (AGS scores,
// NRPS memberships) until shortly before it expires.
type tokenCache struct {
	mu   sync.Mutex
	toks map[tokenKey]*oauth2.Token
}

type tokenKey struct {
	platform int64
	scope    string
}

// clientAssertion is the JWT (RFC 7523 §3) that authenticates the tool to
// the token endpoint: iss and sub our client id, aud the token URL, short
// lived, a fresh jti each time.
func (t *Tool) clientAssertion(p Platform) (string, error) {
	now := t.Now()
	return t.sign(jwt.Claims{
		Issuer: p.ClientID, Subject: p.ClientID, Audience: jwt.Audience{p.TokenURL},
		IssuedAt: numericDate(now), Expiry: numericDate(now.Add(5 * time.Minute)), ID: randomID(),
	})
}

// accessToken returns a cached token for the platform and scope or asks
// its token endpoint for one: OAuth2 client credentials (x/oauth2's
// client) with the signed assertion instead of a secret.
func (t *Tool) accessToken(ctx context.Context, p Platform, scope string) (*oauth2.Token, error) {
	t.tokens.mu.Lock()
	defer t.tokens.mu.Unlock()
	key := tokenKey{p.ID, scope}
	if tok := t.tokens.toks[key]; tok != nil && tok.Expiry.After(t.Now().Add(time.Minute)) {
		return tok, nil
	}
	assertion, err := t.clientAssertion(p)
	if err != nil {
		return nil, err
	}
	cc := clientcredentials.Config{
		ClientID: p.ClientID, TokenURL: p.TokenURL, Scopes: []string{scope},
		EndpointParams: url.Values{"client_assertion_type": {assertionType}, "client_assertion": {assertion}},
		AuthStyle:      oauth2.AuthStyleInParams,
	}
	tok, err := cc.Token(context.WithValue(ctx, oauth2.HTTPClient, t.HTTP))
	if err != nil {
		return nil, fmt.Errorf("lti: access token from %s: %w", p.TokenURL, err)
	}
	if t.tokens.toks == nil {
		t.tokens.toks = map[tokenKey]*oauth2.Token{}
	}
	if tok.Expiry.IsZero() {
		tok.Expiry = t.Now().Add(time.Hour) // expires_in is only recommended; ask again in an hour
	}
	t.tokens.toks[key] = tok
	return tok, nil
}

// forgetToken drops a token the platform refused.
func (t *Tool) forgetToken(p Platform, scope string) {
	t.tokens.mu.Lock()
	delete(t.tokens.toks, tokenKey{p.ID, scope})
	t.tokens.mu.Unlock()
}

// ScoresURL is lineItem's scores service: "/scores" appended to the
// line item URL's path (AGS §3.4.1), its query kept.
func ScoresURL(lineItem string) (string, error) {
	u, err := url.Parse(lineItem)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("lti: line item %q is not a URL", lineItem)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/scores"
	u.RawPath = ""
	return u.String(), nil
}

// PostScore sends s to the line item's scores service. A 401 drops the
// cached token (the next try asks for a new one).
func (t *Tool) PostScore(ctx context.Context, p Platform, lineItem string, s Score) error {
	t.init()
	if err := checkURL(lineItem); err != nil {
		return fmt.Errorf("lti: line item: %w", err)
	}
	target, err := ScoresURL(lineItem)
	if err != nil {
		return err
	}
	tok, err := t.accessToken(ctx, p, ScopeScore)
	if err != nil {
		return err
	}
	body, _ := json.Marshal(s)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("lti: post score: %w", err)
	}
	req.Header.Set("Content-Type", ScoreMediaType)
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	resp, err := t.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("lti: post score: %w", err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode == http.StatusUnauthorized {
		t.forgetToken(p, ScopeScore)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("lti: post score to %s: %s %s", target, resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}
