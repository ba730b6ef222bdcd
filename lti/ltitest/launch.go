package ltitest

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// Launched is one launch driven without a browser: the form the platform
// made the browser post, and the tool's answer to it.
type Launched struct {
	Action string     // the tool's launch URL (redirect_uri)
	Form   url.Values // id_token and state
	Resp   *http.Response
	Body   string // the tool's answer's body
}

var (
	actionRE = regexp.MustCompile(`action="([^"]*)"`)
	fieldRE  = regexp.MustCompile(`name="([^"]+)" value="([^"]*)"`)
)

// Launch does what a browser does between an LMS and the tool: the login
// initiation at loginURL (GET), the redirect to the platform's auth
// endpoint, and the auto-submitted form post to the tool. c must not
// follow redirects (its CheckRedirect returns http.ErrUseLastResponse),
// so the caller sees the tool's own answer.
func (p *Platform) Launch(c *http.Client, loginURL string, m Message, target string) (*Launched, error) {
	hint := p.Prepare(m)
	resp, err := c.Get(loginURL + "?" + p.LoginQuery(hint, target).Encode())
	if err != nil {
		return nil, err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound && resp.StatusCode != http.StatusSeeOther {
		return &Launched{Resp: resp, Body: string(body)}, fmt.Errorf("login initiation: %s", resp.Status)
	}
	auth, err := c.Get(resp.Header.Get("Location"))
	if err != nil {
		return nil, err
	}
	page, _ := io.ReadAll(auth.Body)
	auth.Body.Close()
	if auth.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("platform auth: %s: %s", auth.Status, page)
	}
	l := &Launched{Form: url.Values{}}
	a := actionRE.FindSubmatch(page)
	if a == nil {
		return nil, fmt.Errorf("platform auth: no form in %s", page)
	}
	l.Action = html.UnescapeString(string(a[1]))
	for _, f := range fieldRE.FindAllSubmatch(page, -1) {
		l.Form.Set(string(f[1]), html.UnescapeString(string(f[2])))
	}
	return l, l.Post(c)
}

// Post (again) sends the launch form to the tool, as an LMS page in
// another site does: a cross-site form post.
func (l *Launched) Post(c *http.Client) error {
	req, err := http.NewRequest(http.MethodPost, l.Action, strings.NewReader(l.Form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	req.Header.Set("Origin", "null") // form_post from an auto-submitted page: browsers may send an opaque origin
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	l.Resp, l.Body = resp, string(b)
	return nil
}
