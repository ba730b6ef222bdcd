package main

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestAgentDeps: labagent links none of the web and Markdown stack, whose
// package init (chroma's lexers and styles above all) made every agent
// start in the guest cost about 0.8 s under TCG, nor the store. A new
// import that drags one in fails here, naming the chain to cut.
func TestAgentDeps(t *testing.T) {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(goBin, "list", "-deps", "-f", `{{.ImportPath}} {{join .Imports " "}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	var deps []string
	importers := map[string][]string{} // package → those of the list importing it
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		deps = append(deps, f[0])
		for _, imp := range f[1:] {
			importers[imp] = append(importers[imp], f[0])
		}
	}
	forbidden := []string{
		"github.com/yuin/goldmark", "github.com/alecthomas/chroma", "github.com/a-h/templ",
		"github.com/rdmalab/rdmalab/web", "github.com/rdmalab/rdmalab/store",
		"github.com/rdmalab/rdmalab/lessons", "modernc.org/sqlite", "github.com/nats-io/",
	}
	if len(deps) < 20 || !slices.Contains(deps, "github.com/rdmalab/rdmalab/sandbox/rdmaexp") {
		t.Fatalf("go list -deps listed %d packages without sandbox/rdmaexp: not the agent's list?\n%s", len(deps), out)
	}
	for _, d := range deps {
		for _, f := range forbidden {
			if d == strings.TrimSuffix(f, "/") || strings.HasPrefix(d, f) {
				t.Errorf("labagent links %s (forbidden: %s), imported by %v", d, f, importers[d])
			}
		}
	}
}
