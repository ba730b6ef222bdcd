package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersionLine: the one line names the module version, the revision
// and its time, and says when the tree was modified or no revision is known.
func TestVersionLine(t *testing.T) {
	v := buildVersion{Module: "v1.4.0", Revision: "abc123", Time: "2026-12-01T10:00:00Z", Modified: true, Go: "go1.26.0"}
	if got, want := v.String(), "labserver v1.4.0 revision abc123 (2026-12-01T10:00:00Z, modified) go1.26.0"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	v = buildVersion{Module: "(devel)", Go: "go1.26.0"}
	if got := v.String(); !strings.Contains(got, "no VCS revision") {
		t.Errorf("no revision: %q does not say so", got)
	}
	var out, errb bytes.Buffer
	if code := dispatch(context.Background(), []string{"version", "extra"}, &out, &errb); code != 2 {
		t.Errorf("version with an argument: exit %d, want 2", code)
	}
}

// TestVersionOfBuiltBinary builds labserver from this work tree the way
// `make build` does (-buildvcs=auto, whatever GOFLAGS says) and checks
// that `labserver version` prints the commit checked out (the go tool
// stamps it from git).
func TestVersionOfBuiltBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds labserver")
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git work tree: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "labserver")
	if out, err := exec.Command("go", "build", "-buildvcs=auto", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("labserver version: %v", err)
	}
	line := string(out)
	if !strings.HasPrefix(line, "labserver ") || !strings.Contains(line, "revision "+strings.TrimSpace(string(head))) {
		t.Errorf("labserver version printed %q; want the revision %s", line, head)
	}
}
