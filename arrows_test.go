package rdmalab_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/rdmalab/rdmalab"

// deps lists the lab's packages pkg depends on (itself included), as the
// go tool resolves them.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	var lab []string
	for _, p := range strings.Fields(string(out)) {
		if p == module || strings.HasPrefix(p, module+"/") {
			lab = append(lab, strings.TrimPrefix(strings.TrimPrefix(p, module), "/"))
		}
	}
	return lab
}

// TestDomainArrows keeps the arrows pointing at the domain: the domain
// itself is a leaf, the store speaks only the domain (not the runner or
// anything under sandbox/), and the web imports no experiment — the
// figures it reads from a run are named in the domain.
func TestDomainArrows(t *testing.T) {
	for _, p := range deps(t, module) {
		if p != "" && p != "internal/i18n" {
			t.Errorf("the domain package imports %s; it must stay a leaf (internal/i18n only)", p)
		}
	}
	for _, p := range deps(t, module+"/store") {
		for _, tree := range []string{"sandbox", "runs", "terminals", "machines"} {
			if p == tree || strings.HasPrefix(p, tree+"/") {
				t.Errorf("store depends on %s; it must speak the domain (package rdmalab), not the %s tree", p, tree)
			}
		}
	}
	experiments := []string{"sandbox/hostexp", "sandbox/rdmaexp", "sandbox/expkit", "sandbox/verbs", "machines/agentproc", "machines/vm", "machines/vmguest", "machines/vmproto", "runs/fleet", "terminals"}
	for _, p := range deps(t, module+"/web") {
		for _, e := range experiments {
			if p == e || strings.HasPrefix(p, e+"/") {
				t.Errorf("web depends on %s; a page reads a run's figures by the names the domain declares, not from the experiment", p)
			}
		}
	}
}

// TestAgentCarriesNoQueue: the agent binary performs one run; the queue,
// its scheduling, shared runs and the wait estimate are the server's
// (runs/runner) and stay out of it, as does anything that would drag
// them in.
func TestAgentCarriesNoQueue(t *testing.T) {
	agent := deps(t, module+"/cmd/labagent")
	if !slices.Contains(agent, "sandbox") {
		t.Fatalf("cmd/labagent's dependencies %v lack sandbox: not the agent's list?", agent)
	}
	for _, p := range agent {
		if p == "runs/runner" || strings.HasPrefix(p, "runs/runner/") {
			t.Errorf("cmd/labagent depends on %s; the agent performs one run and must carry no queue", p)
		}
	}
}

// TestWebAudiences keeps the web split by audience: the learner's server
// (web) mounts the instructor area (web/instructor) and both render over
// the page base (web/page), so the area never imports the learner package,
// the page base imports neither, and the run hub (web/runhub) is a leaf of
// the web tree; and no file of web registers an instructor route again —
// the area's handlers live in web/instructor.
func TestWebAudiences(t *testing.T) {
	leaves := map[string][]string{
		"web/instructor": {"web", "web/runhub"},
		"web/page":       {"web", "web/instructor", "web/runhub"},
		"web/runhub":     {"web", "web/instructor", "web/page", "sandbox"},
	}
	for pkg, banned := range leaves {
		for _, p := range deps(t, module+"/"+pkg) {
			for _, b := range banned {
				if p == b || (b == "sandbox" && strings.HasPrefix(p, "sandbox/")) {
					t.Errorf("%s depends on %s", pkg, p)
				}
			}
		}
	}
	files, err := filepath.Glob("web/*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	found := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				path := strings.Trim(lit.Value, "\"`")
				if strings.HasPrefix(path, "/") {
					found++
				}
				if path == "/instructor" || strings.HasPrefix(path, "/instructor/") {
					t.Errorf("%s: %s(%q): an instructor route in package web; the instructor area's handlers live in web/instructor", fset.Position(call.Pos()), sel.Sel.Name, path)
				}
			}
			return true
		})
	}
	if found < 20 {
		t.Errorf("found %d route-like calls in web; the scan is broken", found)
	}
}

// TestSubsystemArrows keeps the four houses of the server in layers, each
// found by its folder: experiments (sandbox: the experiment model, the
// agent protocol and the experiments themselves) at the bottom beside the
// machines that run them (machines: QEMU, the guest image, the guest's
// PID 1 and wire, the process starter); learner terminals (terminals) on
// the machines; runs (runs: the queue, backend choice, workers) on the
// experiments and machines. No house imports one above it or beside it,
// and none imports the web, the store or the course.
func TestSubsystemArrows(t *testing.T) {
	above := map[string][]string{
		"sandbox":   {"runs", "terminals", "web", "store", "lessons", "quiz"},
		"machines":  {"runs", "terminals", "web", "store", "lessons", "quiz"},
		"terminals": {"runs", "web", "store", "lessons", "quiz"},
		"runs":      {"terminals", "web", "store", "lessons", "quiz"},
	}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := map[string]int{}
	for _, pkg := range strings.Fields(string(out)) {
		rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
		house, _, _ := strings.Cut(rel, "/")
		banned, ok := above[house]
		if !ok || strings.HasSuffix(rel, "test") {
			continue // test helpers (vmtest, sandboxtest) may reach further
		}
		seen[house]++
		for _, p := range deps(t, pkg) {
			for _, b := range banned {
				if p == b || strings.HasPrefix(p, b+"/") {
					t.Errorf("%s depends on %s: %s sits below %s", rel, p, house, b)
				}
			}
		}
	}
	for house := range above {
		if seen[house] == 0 {
			t.Errorf("no package found under %s/: the layout changed, update this test", house)
		}
	}
}

// TestTerminalArrows keeps learner terminals in their own house: vm boots
// and supervises guests and knows nothing of terminals; the guest's side
// of a terminal (guestterm) and the guest's PID 1 and agent server
// (vmguest) reach no host package, and the agent's server does not know
// what is plugged into it (agentcmd wires guestterm in).
func TestTerminalArrows(t *testing.T) {
	rules := []struct {
		pkg    string
		banned []string
		why    string
	}{
		{"machines/vm", []string{"terminals/terminal", "terminals/guestterm", "machines/vmguest"},
			"vm boots and supervises guests; terminals are package terminal, over vm's channels"},
		{"machines/vmimage", []string{"terminals/terminal", "terminals/guestterm", "machines/vmguest"},
			"the image build takes only the guest's /init (vmguest/initscript)"},
		{"terminals/terminal", []string{"terminals/guestterm", "machines/vmguest"},
			"the host's side of a terminal talks to the guest's over the port, it does not link it"},
		{"runs/fleet", []string{"terminals/guestterm", "machines/vmguest"}, "a host package"},
		{"web", []string{"terminals/terminal", "terminals/guestterm", "machines/vmguest"},
			"web consumes terminals through its own interfaces (cmd/labserver adapts)"},
		{"machines/vmguest", []string{"terminals/guestterm", "terminals/terminal", "machines/vm"},
			"the agent's server serves what agentcmd plugs in (vmguest.Ops)"},
		{"terminals/guestterm", []string{"terminals/terminal", "machines/vm", "runs/fleet", "web", "store"},
			"the guest's side never links host code"},
	}
	for _, r := range rules {
		for _, p := range deps(t, module+"/"+r.pkg) {
			for _, b := range r.banned {
				if p == b || strings.HasPrefix(p, b+"/") && b != "machines/vmguest" {
					t.Errorf("%s depends on %s: %s", r.pkg, p, r.why)
				}
			}
		}
	}
}
