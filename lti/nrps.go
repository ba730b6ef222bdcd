package lti

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Names and Role Provisioning Services 2.0: the course's roster as the
// LMS holds it (who is enrolled, with which roles, active or not),
// read with a token of scope ScopeNRPS.

// NRPSEndpoint is the launch's NRPS claim (NRPS §3.6.1).
type NRPSEndpoint struct {
	ContextMembershipsURL string   `json:"context_memberships_url"`
	ServiceVersions       []string `json:"service_versions"`
}

// Member is one membership of the course (NRPS §2.2).
type Member struct {
	UserID string   `json:"user_id"` // the sub of the user's launches
	Name   string   `json:"name"`
	Email  string   `json:"email"`
	Roles  []string `json:"roles"`
	// Status is Active (also when absent), Inactive or Deleted.
	Status string `json:"status"`
}

// Active reports whether the membership is current.
func (m Member) Active() bool { return m.Status == "" || m.Status == "Active" }

// Role is the membership's role in the course, by Launch.Role's rule.
func (m Member) Role() Role { return (&Launch{Roles: m.Roles}).Role() }

// MembershipMediaType is the memberships service's content type.
const MembershipMediaType = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"

// maxMemberPages bounds the pages followed (rel="next"): a course of
// thousands is tens of pages.
const maxMemberPages = 200

// Members reads every membership of the course at url (the launch's
// context_memberships_url), following the Link rel="next" pages.
func (t *Tool) Members(ctx context.Context, p Platform, url string) ([]Member, error) {
	t.init()
	var out []Member
	for page := 0; url != ""; page++ {
		if page == maxMemberPages {
			return nil, fmt.Errorf("lti: memberships: more than %d pages", maxMemberPages)
		}
		if err := checkURL(url); err != nil {
			return nil, fmt.Errorf("lti: memberships: %w", err)
		}
		tok, err := t.accessToken(ctx, p, ScopeNRPS)
		if err != nil {
			return nil, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, fmt.Errorf("lti: memberships: %w", err)
		}
		req.Header.Set("Accept", MembershipMediaType)
		req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		resp, err := t.HTTP.Do(req)
		if err != nil {
			return nil, fmt.Errorf("lti: memberships: %w", err)
		}
		var c struct {
			Members []Member `json:"members"`
		}
		if resp.StatusCode != http.StatusOK {
			msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			resp.Body.Close()
			if resp.StatusCode == http.StatusUnauthorized {
				t.forgetToken(p, ScopeNRPS)
			}
			return nil, fmt.Errorf("lti: memberships from %s: %s %s", url, resp.Status, strings.TrimSpace(string(msg)))
		}
		err = json.NewDecoder(resp.Body).Decode(&c)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("lti: memberships from %s: %w", url, err)
		}
		out = append(out, c.Members...)
		url = nextLink(resp.Header.Values("Link"))
	}
	return out, nil
}

// nextLink is the URL of a Link header's rel="next" (RFC 8288), or "".
func nextLink(links []string) string {
	for _, h := range links {
		for _, l := range strings.Split(h, ",") {
			target, params, ok := strings.Cut(strings.TrimSpace(l), ";")
			if !ok || !strings.HasPrefix(target, "<") || !strings.HasSuffix(target, ">") {
				continue
			}
			for _, p := range strings.Split(params, ";") {
				k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
				if strings.EqualFold(k, "rel") && strings.Trim(v, `"`) == "next" {
					return target[1 : len(target)-1]
				}
			}
		}
	}
	return ""
}
