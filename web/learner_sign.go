package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"

	"github.com/rdmalab/rdmalab/store"
)

// A signed learner cookie is "ID.MAC": MAC is the first 16 bytes of
// HMAC-SHA256(LearnerKey, ID), base64url. The id alone (as CSV exports
// and logs show it) does not make a valid cookie; without LearnerKey the
// cookie is the bare id.

// learnerMACLen is the MAC length in bytes (128 bits, like the id).
const learnerMACLen = 16

func (s *Server) learnerMAC(id string) string {
	m := hmac.New(sha256.New, s.cfg.LearnerKey)
	m.Write([]byte(id))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:learnerMACLen])
}

// learnerCookieValue is the cookie value for learner id.
func (s *Server) learnerCookieValue(id string) string {
	if len(s.cfg.LearnerKey) == 0 {
		return id
	}
	return id + "." + s.learnerMAC(id)
}

// cookieLearner returns the learner id a cookie value proves, or "" when
// it proves none (malformed, unsigned or wrongly signed).
func (s *Server) cookieLearner(v string) string {
	if len(s.cfg.LearnerKey) == 0 {
		if store.ValidLearnerID(v) {
			return v
		}
		return ""
	}
	id, mac, ok := strings.Cut(v, ".")
	if !ok || !store.ValidLearnerID(id) || !hmac.Equal([]byte(mac), []byte(s.learnerMAC(id))) {
		return ""
	}
	return id
}

// cookieIDPart is the id part of a cookie value, signed or not (for
// checks that only ask whether a visitor is a learner at all).
func cookieIDPart(v string) string {
	id, _, _ := strings.Cut(v, ".")
	return id
}
