package lti

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
)

// Tool is the lab's side of LTI 1.3. Its zero value is not usable: set
// Registry, and Key or KeyFile; HTTP and Now have defaults.
type Tool struct {
	Registry Registry
	// Key signs the tool's JWTs; when nil, it is read from KeyFile (made
	// there at first use: a lab that never meets an LMS makes no key).
	Key     *Key
	KeyFile string
	HTTP    *http.Client     // talks to platforms; nil: NewHTTPClient()
	Now     func() time.Time // nil: time.Now

	once    sync.Once
	mu      sync.Mutex
	keysets map[string]*oidc.RemoteKeySet // by JWKS URL: fetched once, again on an unknown kid
	tokens  tokenCache                    // AGS access tokens (ags.go)
}

func (t *Tool) init() {
	t.once.Do(func() {
		if t.HTTP == nil {
			t.HTTP = NewHTTPClient()
		}
		if t.Now == nil {
			t.Now = time.Now
		}
		t.keysets = map[string]*oidc.RemoteKeySet{}
	})
}

// signingKey is Key, loaded or made from KeyFile the first time.
func (t *Tool) signingKey() (*Key, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.Key != nil {
		return t.Key, nil
	}
	if t.KeyFile == "" {
		return nil, errors.New("lti: the tool has no key")
	}
	k, err := LoadOrCreateKey(t.KeyFile)
	if err != nil {
		return nil, err
	}
	t.Key = k
	return k, nil
}

// JWKS is the tool's public keyset (GET /lti/jwks).
func (t *Tool) JWKS() ([]byte, error) {
	k, err := t.signingKey()
	if err != nil {
		return nil, err
	}
	return k.JWKS(), nil
}

// sign signs claims with the tool's key.
func (t *Tool) sign(claims any) (string, error) {
	k, err := t.signingKey()
	if err != nil {
		return "", err
	}
	return k.Sign(claims)
}

// keySet is the platform's cached JWKS. go-oidc's RemoteKeySet keeps the
// keys it fetched and fetches again only when a token names a kid it does
// not hold (a rotated key), one fetch at a time.
func (t *Tool) keySet(jwksURL string) *oidc.RemoteKeySet {
	t.mu.Lock()
	defer t.mu.Unlock()
	ks := t.keysets[jwksURL]
	if ks == nil {
		ks = oidc.NewRemoteKeySet(oidc.ClientContext(context.Background(), t.HTTP), jwksURL)
		t.keysets[jwksURL] = ks
	}
	return ks
}
