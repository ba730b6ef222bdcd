package fleet

import (
	"fmt"
	"github.com/rdmalab/rdmalab/internal/textclip"
	"regexp"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/rdmalab/rdmalab/sandbox"
)

// Who may do what on the lab's NATS server. Every worker is untrusted
// beyond its own runs: it may take jobs from the work queue, claim them,
// send the events of the runs the server granted it, and hear the cancels
// and commands of those runs — nothing else. It cannot publish jobs,
// manage or delete the stream (JetStream's API is closed to it but for
// fetching from and acknowledging the two work consumers the server
// creates), nor touch another worker's subjects: each worker's subjects
// carry its name (lab.ev.<name>.<run>, …), and a credential's permissions
// hold only its own name — its learner terminals' keystrokes and output
// too (lab.tin.<name>.…, lab.tout.<name>.…, term.go). The server checks
// the rest: events count only on the subject of the worker whose claim it
// granted for that run, terminal output only from the worker the terminal
// was opened on.
//
// Credentials: an nkey per worker (WorkerKey: a name bound to a public key;
// the seed stays on the worker), or one shared token. A token is one
// credential for every worker that holds it: any holder may act as any
// token worker (so one taken token reaches every token worker's runs), but
// not as an nkey worker, and no more than a worker may. Revoke a worker by
// removing its key (Server.SetWorkers, or a restart with the key gone).

// WorkerKey binds a worker's name to its public nkey.
type WorkerKey struct {
	Name string
	Pub  string
}

// validName is what a worker may be called: it is a subject token, a
// piece of the run's backend name (vm@NAME) and of /lab.
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$`)

// ValidName reports whether name may name a worker.
func ValidName(name string) bool { return validName.MatchString(name) }

// ParseWorkerKeys reads NAME=UPUBKEY pairs separated by commas or
// whitespace (--nats-nkeys), checking each name and key.
func ParseWorkerKeys(s string) ([]WorkerKey, error) {
	var out []WorkerKey
	seen := map[string]bool{}
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' }) {
		name, pub, ok := strings.Cut(f, "=")
		if !ok {
			return nil, fmt.Errorf("worker key %q: give each key its worker's name, NAME=%s (the worker joins with --name NAME)", clip(f), clip(f))
		}
		if !ValidName(name) {
			return nil, fmt.Errorf("worker name %q: 1–32 letters, digits, - or _, starting with a letter or digit", clip(name))
		}
		if !nkeys.IsValidPublicUserKey(pub) {
			return nil, fmt.Errorf("worker %s: %q is not a public user nkey (U…; nk -gen user -pubout)", name, clip(pub))
		}
		if seen[name] {
			return nil, fmt.Errorf("worker %s is named twice", name)
		}
		seen[name] = true
		out = append(out, WorkerKey{Name: name, Pub: pub})
	}
	return out, nil
}

// clip keeps what a worker sent short in a log line or an error.
func clip(s string) string { return textclip.Runes(s, 60) }

// tokenUser is the user a token worker joins as (its password is the token).
const tokenUser = "worker"

// workerPerms are the permissions of worker name ("*": any token worker),
// without the names in deny (the nkey workers, for a token).
func workerPerms(name string, deny []string) *server.Permissions {
	pub := []string{
		subjHeartbeat + name,
		subjClaim + name + ".*",
		subjEvents + name + ".*",
		subjTermOut + name + ".>",
	}
	for _, need := range []sandbox.Need{sandbox.NeedHost, sandbox.NeedRDMA} {
		c := stream + "." + consumerName(need)
		pub = append(pub, "$JS.API.CONSUMER.INFO."+c, "$JS.API.CONSUMER.MSG.NEXT."+c, "$JS.ACK."+c+".>")
	}
	sub := []string{
		subjCancel + name + ".*",
		subjCommands + name + ".*",
		subjTermIn + name + ".>",
		inboxPrefix(name) + ".>",
	}
	p := &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: pub},
		Subscribe: &server.SubjectPermission{Allow: sub},
	}
	for _, d := range deny {
		p.Publish.Deny = append(p.Publish.Deny, subjHeartbeat+d, subjClaim+d+".*", subjEvents+d+".*", subjTermOut+d+".>")
		p.Subscribe.Deny = append(p.Subscribe.Deny, subjCancel+d+".*", subjCommands+d+".*", subjTermIn+d+".>", inboxPrefix(d)+".>")
	}
	return p
}

// inboxPrefix is where worker name's replies come (its claims' answers,
// the jobs it fetches): a worker hears only its own.
func inboxPrefix(name string) string {
	if name == "*" {
		return "_INBOX"
	}
	return "_INBOX." + name
}

// authOptions fills opts with the lab's own user (labPass), the token
// workers' user and one nkey user per worker key.
func authOptions(opts *server.Options, labPass, token string, keys []WorkerKey) {
	opts.Users = []*server.User{{Username: "lab", Password: labPass}}
	var names []string
	for _, k := range keys {
		names = append(names, k.Name)
	}
	if token != "" {
		opts.Users = append(opts.Users, &server.User{Username: tokenUser, Password: token, Permissions: workerPerms("*", names)})
	}
	opts.Nkeys = nil
	for _, k := range keys {
		opts.Nkeys = append(opts.Nkeys, &server.NkeyUser{Nkey: k.Pub, Permissions: workerPerms(k.Name, nil)})
	}
}
