package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/lti"
	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web"
	"github.com/rdmalab/rdmalab/web/instructor"
)

const ltiUsage = `usage: labserver lti add --issuer URL --client-id ID --auth-url URL --token-url URL --jwks-url URL --deployment ID [--deployment ID…] [--frame-origin URL…]
       labserver lti list            the registered LMS platforms
       labserver lti remove ID       remove a registration (its learners and classes stay)
       labserver lti urls --public-url URL   the tool's URLs to type into the LMS
  Registers the lab as an LTI 1.3 tool of a school's LMS (Moodle, Canvas…);
  docs/operations.md, "LTI 1.3", says which LMS field is which.
  --db PATH   the lab database [LAB_DB] (default ./rdmalab.db); safe while serving
`

// multi is a repeatable flag.
type multi []string

func (m *multi) String() string { return strings.Join(*m, " ") }
func (m *multi) Set(v string) error {
	*m = append(*m, strings.Fields(strings.ReplaceAll(v, ",", " "))...)
	return nil
}

// runLTI is `labserver lti add|list|remove|urls`.
func runLTI(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	verb, args, fset, code, ok := verbFlags("lti", ltiUsage, args, stderr)
	if !ok {
		return code
	}
	dbPath := fset.String("db", defaultDB(), "database file")
	var p lti.Platform
	var deps, frames multi
	fset.StringVar(&p.Issuer, "issuer", "", "the platform's issuer (iss)")
	fset.StringVar(&p.ClientID, "client-id", "", "the client id the platform gave the lab")
	fset.StringVar(&p.AuthURL, "auth-url", "", "the platform's OIDC authentication request URL")
	fset.StringVar(&p.TokenURL, "token-url", "", "the platform's OAuth2 access token URL")
	fset.StringVar(&p.JWKSURL, "jwks-url", "", "the platform's public keyset URL")
	fset.Var(&deps, "deployment", "a deployment id (repeat for more)")
	fset.Var(&frames, "frame-origin", "another origin that shows the lab in a frame (Canvas: the school's own domain)")
	public := fset.String("public-url", os.Getenv("LAB_PUBLIC_URL"), "the lab's address as browsers reach it [LAB_PUBLIC_URL]")
	pos, code, ok := parseInterleaved(fset, args)
	if !ok {
		return code
	}
	if verb == "urls" {
		if *public == "" {
			fmt.Fprintln(stderr, "labserver lti urls: --public-url (or LAB_PUBLIC_URL) is required: the LMS must reach these URLs")
			return 2
		}
		for _, u := range instructor.ToolURLs(strings.TrimSuffix(*public, "/"), func(k string) string { return web.UIText("en", k) }) {
			fmt.Fprintf(stdout, "%-40s %s\n", u.Label, u.Value)
		}
		return 0
	}
	want := map[string]int{"add": 0, "list": 0, "remove": 1}
	n, known := want[verb]
	if !known {
		fmt.Fprintf(stderr, "labserver lti: unknown action %q\n\n%s", verb, ltiUsage)
		return 2
	}
	if len(pos) != n {
		fmt.Fprint(stderr, ltiUsage)
		return 2
	}
	if _, err := os.Stat(*dbPath); err != nil && verb != "add" {
		fmt.Fprintf(stderr, "labserver lti: %v (set --db or LAB_DB to the lab's database)\n", err)
		return 1
	}
	db, err := store.Open(*dbPath)
	if err != nil {
		fmt.Fprintln(stderr, "labserver lti:", err)
		return 1
	}
	defer db.Close()
	switch verb {
	case "add":
		p.Deployments, p.FrameOrigins = deps, frames
		id, err := db.AddLTIPlatform(ctx, p)
		var ve *store.ValidationError
		if errors.As(err, &ve) {
			fmt.Fprintf(stderr, "labserver lti add: %s\n", ve.Message)
			return 2
		}
		if err != nil {
			fmt.Fprintln(stderr, "labserver lti add:", err)
			return 1
		}
		fmt.Fprintf(stdout, "registered platform %d: %s (client id %s); a running lab accepts its launches now\n", id, p.Issuer, p.ClientID)
	case "list":
		ps, err := db.LTIPlatforms(ctx)
		if err != nil {
			fmt.Fprintln(stderr, "labserver lti list:", err)
			return 1
		}
		for _, p := range ps {
			fmt.Fprintf(stdout, "%d\t%s\tclient %s\tdeployments %s\n\tauth %s\n\ttoken %s\n\tjwks %s\n", p.ID, p.Issuer, p.ClientID,
				strings.Join(p.Deployments, ","), p.AuthURL, p.TokenURL, p.JWKSURL)
		}
		if len(ps) == 0 {
			fmt.Fprintln(stdout, "no platform registered (labserver lti add …)")
		}
	case "remove":
		id, err := strconv.ParseInt(pos[0], 10, 64)
		if err != nil {
			fmt.Fprintf(stderr, "labserver lti remove: %q is not a platform id (see labserver lti list)\n", pos[0])
			return 2
		}
		if err := db.RemoveLTIPlatform(ctx, id); errors.Is(err, lti.ErrNoPlatform) {
			fmt.Fprintf(stderr, "labserver lti remove: no platform %d\n", id)
			return 1
		} else if err != nil {
			fmt.Fprintln(stderr, "labserver lti remove:", err)
			return 1
		}
		fmt.Fprintf(stdout, "removed platform %d\n", id)
	}
	return 0
}

// ltiKeyName is the tool's RSA key file; it lives beside the database.
const ltiKeyName = "lti-tool-key.pem"

// ltiKeyFile is where the tool's RSA key lives: beside the database.
func ltiKeyFile(dbPath string) string {
	return filepath.Join(filepath.Dir(dbPath), ltiKeyName)
}
