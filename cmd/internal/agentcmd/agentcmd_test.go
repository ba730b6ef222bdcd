package agentcmd

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestOnceRefusesBadRequests: the agent's one-run entry point answers a
// request it cannot run — not JSON, an experiment it does not know — with
// exit status 1 and an error a person can read, and runs nothing.
func TestOnceRefusesBadRequests(t *testing.T) {
	for _, c := range []struct{ name, req, want string }{
		{"not JSON", "{\"experiment\":\n", "request"},
		{"unknown experiment", `{"experiment":"rm-rf","params":{}}` + "\n", "rm-rf"},
	} {
		var out, errb bytes.Buffer
		code := Once(context.Background(), "labagent", strings.NewReader(c.req), &out, &errb)
		if code != 1 {
			t.Errorf("%s: exit %d, want 1 (stdout %q, stderr %q)", c.name, code, out.String(), errb.String())
		}
		if all := out.String() + errb.String(); !strings.Contains(all, c.want) {
			t.Errorf("%s: said %q, want it to name %q", c.name, all, c.want)
		}
	}
}

// TestGuestInitOnlyAsPID1: guest-init outside the guest (not PID 1) or
// without the agent's pid prints its usage and exits 2, starting nothing.
func TestGuestInitOnlyAsPID1(t *testing.T) {
	for _, args := range [][]string{nil, {"12"}, {"x"}} {
		var errb bytes.Buffer
		if code := GuestInit(args, &errb); code != 2 || !strings.Contains(errb.String(), "usage: labagent guest-init") {
			t.Errorf("GuestInit(%q) = %d, %q; want 2 and the usage", args, code, errb.String())
		}
	}
}

// TestRegistryNamesEveryExperimentOnce: the agents and the server agree
// on one registry; every experiment in it has an id, a title in both
// languages and is found by its id.
func TestRegistryNamesEveryExperimentOnce(t *testing.T) {
	reg := Registry()
	all := reg.List()
	if len(all) < 30 {
		t.Fatalf("the registry holds %d experiments; the course embeds more", len(all))
	}
	for _, e := range all {
		if e.ID == "" || e.Title["en"] == "" || e.Title["zh"] == "" {
			t.Errorf("experiment %q: title %v", e.ID, e.Title)
		}
		if reg.Get(e.ID) != e {
			t.Errorf("Get(%q) does not find it", e.ID)
		}
	}
}
