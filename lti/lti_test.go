package lti

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second}
	for i, w := range want {
		if got := Backoff(i + 1); got != w {
			t.Errorf("Backoff(%d) = %v, want %v", i+1, got, w)
		}
	}
	if got := Backoff(40); got != time.Hour {
		t.Errorf("Backoff(40) = %v, want the one-hour cap", got)
	}
}

func TestScoresURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://lms.example/li/3":         "https://lms.example/li/3/scores",
		"https://lms.example/li/3/?type=x": "https://lms.example/li/3/scores?type=x",
		"https://lms.example/api/li/7?a=1": "https://lms.example/api/li/7/scores?a=1",
	} {
		if got, err := ScoresURL(in); err != nil || got != want {
			t.Errorf("ScoresURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ScoresURL("not a url"); err == nil {
		t.Error("ScoresURL accepted a relative string")
	}
}

// TestBoundedBody: a platform's answer longer than MaxBody is an error,
// never silently cut; MaxBody itself reads whole.
func TestBoundedBody(t *testing.T) {
	for _, n := range []int{MaxBody, MaxBody + 1} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(strings.Repeat("x", n)))
		}))
		resp, err := NewHTTPClient().Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		srv.Close()
		if n == MaxBody && (err != nil || len(b) != n) {
			t.Errorf("%d bytes: read %d, %v", n, len(b), err)
		}
		if n > MaxBody && err == nil {
			t.Errorf("%d bytes read without an error", n)
		}
	}
}

func TestKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lti-tool-key.pem")
	k1, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file %v, %v: want mode 0600", fi.Mode(), err)
	}
	k2, err := LoadOrCreateKey(path)
	if err != nil || k2.KeyID() != k1.KeyID() {
		t.Fatalf("the key read back has kid %q, made %q (%v)", k2.KeyID(), k1.KeyID(), err)
	}
	if !strings.Contains(string(k1.JWKS()), k1.KeyID()) || strings.Contains(string(k1.JWKS()), `"d"`) {
		t.Errorf("JWKS lacks the kid or leaks the private part: %s", k1.JWKS())
	}
	os.WriteFile(path, []byte("garbage"), 0o600)
	if _, err := LoadOrCreateKey(path); err == nil {
		t.Error("a corrupt key file was accepted (or replaced)")
	}
}

func TestPlatformCheck(t *testing.T) {
	ok := Platform{Issuer: "https://lms.example", ClientID: "c", AuthURL: "https://lms.example/a", TokenURL: "https://lms.example/t",
		JWKSURL: "https://lms.example/j", Deployments: []string{"1"}}
	if err := ok.Check(); err != nil {
		t.Fatal(err)
	}
	local := ok
	local.Issuer = "http://127.0.0.1:8080"
	if err := local.Check(); err != nil {
		t.Errorf("a loopback http issuer refused: %v", err)
	}
	for name, bad := range map[string]func(*Platform){
		"http issuer":   func(p *Platform) { p.Issuer = "http://lms.example" },
		"no client id":  func(p *Platform) { p.ClientID = " " },
		"no deployment": func(p *Platform) { p.Deployments = nil },
		"relative jwks": func(p *Platform) { p.JWKSURL = "/jwks" },
		"ftp token url": func(p *Platform) { p.TokenURL = "ftp://lms.example/t" },
	} {
		p := ok
		bad(&p)
		if err := p.Check(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestRole(t *testing.T) {
	for want, roles := range map[Role][]string{
		RoleIsLearner:    {RoleLearner},
		RoleIsInstructor: {RoleInstructor, RoleLearner},
		RoleIsTA:         {RoleInstructor, RoleTA},
	} {
		if got := (&Launch{Roles: roles}).Role(); got != want {
			t.Errorf("roles %v: %v, want %v", roles, got, want)
		}
	}
	if got := (&Launch{}).Role(); got != RoleIsLearner {
		t.Errorf("no roles: %v, want learner", got)
	}
}

// TestRoleIsTheCourses (issue 41): only context roles make course staff;
// a site or institution administrator launching as a learner is one.
func TestRoleIsTheCourses(t *testing.T) {
	for _, tc := range []struct {
		roles []string
		want  Role
	}{
		{[]string{RoleLearner}, RoleIsLearner},
		{[]string{RoleLearner, "http://purl.imsglobal.org/vocab/lis/v2/system/person#Administrator"}, RoleIsLearner},
		{[]string{RoleLearner, "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Administrator"}, RoleIsLearner},
		{[]string{"http://purl.imsglobal.org/vocab/lis/v2/membership#Administrator"}, RoleIsInstructor},
		{[]string{RoleInstructor}, RoleIsInstructor},
		{[]string{RoleInstructor, RoleTA}, RoleIsTA},
		{[]string{"TeachingAssistant"}, RoleIsTA},
	} {
		if got := (&Launch{Roles: tc.roles}).Role(); got != tc.want {
			t.Errorf("%v: role %d, want %d", tc.roles, got, tc.want)
		}
	}
}

func TestNextLink(t *testing.T) {
	for in, want := range map[string]string{
		`<https://lms.example/m?p=2>; rel="next"`:                                        "https://lms.example/m?p=2",
		`<https://lms.example/m?p=1>; rel="prev", <https://lms.example/m?p=3>; rel=next`: "https://lms.example/m?p=3",
		`<https://lms.example/m?p=1>; rel="differences"`:                                 "",
		``: "",
	} {
		if got := nextLink([]string{in}); got != want {
			t.Errorf("nextLink(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCheckNamesTheField(t *testing.T) {
	p := Platform{Issuer: "https://lms.example", ClientID: "c", AuthURL: "ftp://x", TokenURL: "https://lms.example/t",
		JWKSURL: "https://lms.example/j", Deployments: []string{"1"}}
	fe, ok := p.Check().(*FieldError)
	if !ok || fe.Field != "auth-url" || strings.Contains(fe.Message, "--") {
		t.Errorf("Check: %#v", p.Check())
	}
}
