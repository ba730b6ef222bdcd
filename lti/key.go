package lti

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Key is the tool's own RSA key: it signs deep-linking responses and the
// client assertions of AGS token requests; platforms read its public half
// from the tool's JWKS URL. Its key id is the RFC 7638 thumbprint, so it
// is stable for as long as the key file is.
type Key struct {
	priv *rsa.PrivateKey
	kid  string
}

// keyBits: RSA 2048 is what LTI's Security Framework asks of RS256 keys.
const keyBits = 2048

// LoadOrCreateKey reads the tool key from path (PEM, PKCS#8), or makes a
// new one there (mode 0600) when the file does not exist. The key lives
// beside the database: a backup of the data directory keeps it, and a
// platform that stored our JWKS URL keeps trusting us after a restart.
func LoadOrCreateKey(path string) (*Key, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		priv, err := rsa.GenerateKey(rand.Reader, keyBits)
		if err != nil {
			return nil, fmt.Errorf("lti: new tool key: %w", err)
		}
		der, err := x509.MarshalPKCS8PrivateKey(priv)
		if err != nil {
			return nil, fmt.Errorf("lti: new tool key: %w", err)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("lti: new tool key: %w", err)
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
			return nil, fmt.Errorf("lti: new tool key: %w", err)
		}
		// A link, not a rename: of two processes racing to make the key
		// (serve and `lti urls`), the first one wins and the other reads it.
		if err := os.Link(tmp, path); err != nil && !errors.Is(err, fs.ErrExist) {
			os.Remove(tmp)
			return nil, fmt.Errorf("lti: new tool key: %w", err)
		}
		os.Remove(tmp)
		return LoadOrCreateKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("lti: tool key: %w", err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("lti: tool key %s: not a PEM private key", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("lti: tool key %s: %w", path, err)
	}
	priv, ok := k.(*rsa.PrivateKey)
	if !ok || priv.N.BitLen() < keyBits {
		return nil, fmt.Errorf("lti: tool key %s: not an RSA key of at least %d bits", path, keyBits)
	}
	return newKey(priv)
}

func newKey(priv *rsa.PrivateKey) (*Key, error) {
	tp, err := (&jose.JSONWebKey{Key: &priv.PublicKey}).Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("lti: key id: %w", err)
	}
	return &Key{priv: priv, kid: base64.RawURLEncoding.EncodeToString(tp)}, nil
}

// KeyID is the key's kid.
func (k *Key) KeyID() string { return k.kid }

// JWKS is the tool's public keyset as served at its JWKS URL.
func (k *Key) JWKS() []byte {
	b, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{
		Key: &k.priv.PublicKey, KeyID: k.kid, Algorithm: string(jose.RS256), Use: "sig",
	}}})
	return b
}

// Sign makes a compact RS256 JWT of claims (any JSON object), with the
// key id in its header so a platform picks the right key.
func (k *Key) Sign(claims any) (string, error) {
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: k.priv},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader(jose.HeaderKey("kid"), k.kid))
	if err != nil {
		return "", fmt.Errorf("lti: signer: %w", err)
	}
	tok, err := jwt.Signed(sig).Claims(claims).Serialize()
	if err != nil {
		return "", fmt.Errorf("lti: sign: %w", err)
	}
	return tok, nil
}

// randomID is 128 random bits, base64url: states, nonces, jti.
func randomID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// numericDate is a JWT NumericDate.
func numericDate(t time.Time) *jwt.NumericDate { return jwt.NewNumericDate(t) }
