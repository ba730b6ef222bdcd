package agentproc

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A host run's agent is the small labagent beside labserver when there is
// an executable one; else labserver's own agent verb.
func TestDefaultArgv(t *testing.T) {
	dir := t.TempDir()
	server := filepath.Join(dir, "labserver")
	small := filepath.Join(dir, SmallAgent)
	if got := DefaultArgv(server); !slices.Equal(got, []string{server, "agent"}) {
		t.Errorf("no labagent beside: %q", got)
	}
	if err := os.WriteFile(small, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := DefaultArgv(server); !slices.Equal(got, []string{server, "agent"}) {
		t.Errorf("a labagent that is not executable: %q", got)
	}
	if err := os.Chmod(small, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := DefaultArgv(server); !slices.Equal(got, []string{small}) {
		t.Errorf("labagent beside: %q", got)
	}
	if got := DefaultArgv(small); !slices.Equal(got, []string{small}) {
		t.Errorf("labagent itself: %q", got)
	}
}
