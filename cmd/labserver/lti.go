package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/lti"
	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web"
	"github.com/rdmalab/rdmalab/web/instructor"
)

const ltiUsage = `usage: labserver lti add --issuer URL --client-id ID --auth-url URL --token-url URL --jwks-url URL --deployment ID [--deployment ID…] [--frame-origin URL…]
       labserver lti update ID [--issuer URL] [--client-id ID] [--auth-url URL] [--token-url URL] [--jwks-url URL]
                               [--deployment ID…] [--add-deployment ID…] [--remove-deployment ID…] [--frame-origin URL…]
                                     change a registration: what is given replaces it (--deployment: the whole set),
                                     the rest stays; its learners, classes and graded links are untouched
       labserver lti list            the registered LMS platforms (and removed ones whose links are kept)
       labserver lti remove ID       stop a registration's launches and scores; its learners, classes and links stay,
                                     and "lti add" with the same issuer and client id reconnects them
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
	var deps, frames, addDeps, rmDeps multi
	fset.StringVar(&p.Issuer, "issuer", "", "the platform's issuer (iss)")
	fset.StringVar(&p.ClientID, "client-id", "", "the client id the platform gave the lab")
	fset.StringVar(&p.AuthURL, "auth-url", "", "the platform's OIDC authentication request URL")
	fset.StringVar(&p.TokenURL, "token-url", "", "the platform's OAuth2 access token URL")
	fset.StringVar(&p.JWKSURL, "jwks-url", "", "the platform's public keyset URL")
	fset.Var(&deps, "deployment", "a deployment id (repeat for more)")
	fset.Var(&frames, "frame-origin", "another origin that shows the lab in a frame (Canvas: the school's own domain)")
	fset.Var(&addDeps, "add-deployment", "update: a deployment id to accept too (repeat for more)")
	fset.Var(&rmDeps, "remove-deployment", "update: a deployment id to accept no more (repeat for more)")
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
	want := map[string]int{"add": 0, "list": 0, "remove": 1, "update": 1}
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
	set := map[string]bool{}
	fset.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch verb {
	case "add":
		p.Deployments, p.FrameOrigins = deps, frames
		if err := p.Check(); err != nil {
			fmt.Fprintf(stderr, "labserver lti add: %s\n", flagError(err))
			return 2
		}
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
		gone, err := db.RemovedLTIPlatforms(ctx)
		if err != nil {
			fmt.Fprintln(stderr, "labserver lti list:", err)
			return 1
		}
		for _, r := range gone {
			fmt.Fprintf(stdout, "%d\t%s\tclient %s\tremoved %s: %d users kept (labserver lti add with this issuer and client id reconnects them)\n",
				r.ID, r.Issuer, r.ClientID, r.RemovedAt.Format("2006-01-02"), r.Users)
		}
	case "update":
		id, err := strconv.ParseInt(pos[0], 10, 64)
		if err != nil {
			fmt.Fprintf(stderr, "labserver lti update: %q is not a platform id (see labserver lti list)\n", pos[0])
			return 2
		}
		cur, err := db.PlatformByID(ctx, id)
		if errors.Is(err, lti.ErrNoPlatform) {
			fmt.Fprintf(stderr, "labserver lti update: no platform %d (see labserver lti list)\n", id)
			return 1
		} else if err != nil {
			fmt.Fprintln(stderr, "labserver lti update:", err)
			return 1
		}
		for name, v := range map[string]*string{"issuer": &cur.Issuer, "client-id": &cur.ClientID, "auth-url": &cur.AuthURL,
			"token-url": &cur.TokenURL, "jwks-url": &cur.JWKSURL} {
			if set[name] {
				*v = fset.Lookup(name).Value.String()
			}
		}
		if set["deployment"] {
			cur.Deployments = deps
		}
		if set["frame-origin"] {
			cur.FrameOrigins = frames
		}
		for _, d := range addDeps {
			if !cur.HasDeployment(d) {
				cur.Deployments = append(cur.Deployments, d)
			}
		}
		cur.Deployments = slices.DeleteFunc(cur.Deployments, func(d string) bool { return slices.Contains(rmDeps, d) })
		if err := cur.Check(); err != nil {
			fmt.Fprintf(stderr, "labserver lti update: %s\n", flagError(err))
			return 2
		}
		err = db.UpdateLTIPlatform(ctx, cur)
		var ve *store.ValidationError
		if errors.As(err, &ve) {
			fmt.Fprintf(stderr, "labserver lti update: %s\n", ve.Message)
			return 2
		}
		if err != nil {
			fmt.Fprintln(stderr, "labserver lti update:", err)
			return 1
		}
		fmt.Fprintf(stdout, "updated platform %d: %s (client id %s), deployments %s; its learners, classes and graded links are as they were\n",
			id, cur.Issuer, cur.ClientID, strings.Join(cur.Deployments, ","))
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
		fmt.Fprintf(stdout, "removed platform %d: its launches are refused and its scores wait; its learners, classes and links are kept, and labserver lti add with the same issuer and client id reconnects them\n", id)
	}
	return 0
}

// flagError names a registration field Check refused by its flag.
func flagError(err error) string {
	var fe *lti.FieldError
	if errors.As(err, &fe) {
		return "--" + fe.Field + ": " + fe.Message
	}
	return err.Error()
}

// ltiKeyName is the tool's RSA key file; it lives beside the database.
const ltiKeyName = "lti-tool-key.pem"

// ltiKeyFile is where the tool's RSA key lives: beside the database.
func ltiKeyFile(dbPath string) string {
	return filepath.Join(filepath.Dir(dbPath), ltiKeyName)
}
