// Package deploy holds the files an admin installs (the systemd unit, the
// Kubernetes manifest); its test keeps them and docs/operations.md true
// to the code.
package deploy

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// knownEnv is every LAB_* variable the Go code reads.
func knownEnv(t *testing.T) map[string]bool {
	t.Helper()
	re := regexp.MustCompile(`"(LAB_[A-Z_]+)"`)
	known := map[string]bool{}
	err := filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && p != "..") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range re.FindAllSubmatch(b, -1) {
			known[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(known) < 5 {
		t.Fatalf("found only %v in the code", known)
	}
	return known
}

// checkEnvNames fails for any LAB_* name in text that the code never reads.
func checkEnvNames(t *testing.T, where string, text []byte, known map[string]bool) {
	t.Helper()
	for _, m := range regexp.MustCompile(`\bLAB_[A-Z_]+\b`).FindAll(text, -1) {
		if !known[string(m)] && !strings.HasPrefix(string(m), "LAB_TEST_") {
			t.Errorf("%s names %s, which no code reads", where, m)
		}
	}
}

// systemdVerify runs systemd-analyze verify on unit files in dir, with
// /usr/local/bin/labserver replaced by a real executable (the verifier
// checks that commands exist).
func systemdVerify(t *testing.T, units map[string]string) {
	t.Helper()
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatalf("systemd-analyze is needed to check the systemd units (Debian package systemd): %v", err)
	}
	dir := t.TempDir()
	var paths []string
	for name, text := range units {
		text = strings.ReplaceAll(text, "/usr/local/bin/labserver", "/bin/true")
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	slices.Sort(paths)
	out, err := exec.Command(analyze, append([]string{"verify"}, paths...)...).CombinedOutput()
	// A clean unit verifies silently (User= is not checked against the
	// users of this machine); any line is a real finding.
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

func TestSystemdUnit(t *testing.T) {
	b, err := os.ReadFile("rdmalab.service")
	if err != nil {
		t.Fatal(err)
	}
	systemdVerify(t, map[string]string{"rdmalab.service": string(b)})
	unit := string(b)
	for _, want := range []string{
		"AmbientCapabilities=CAP_IPC_LOCK",
		"KillMode=mixed",
		"ExecStart=/usr/local/bin/labserver serve",
		"Environment=LAB_DB=/var/lib/rdmalab/",
		"StateDirectory=rdmalab",
	} {
		if !strings.Contains(unit, want) {
			t.Errorf("rdmalab.service lacks %q", want)
		}
	}
	checkEnvNames(t, "rdmalab.service", b, knownEnv(t))
}

// TestOperationsDoc: the backup units in docs/operations.md verify, the
// nginx snippet keeps event streams unbuffered, and every LAB_* variable it
// names exists.
func TestOperationsDoc(t *testing.T) {
	doc, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	checkEnvNames(t, "docs/operations.md", doc, knownEnv(t))
	blocks := codeBlocks(string(doc))
	units := map[string]string{}
	for _, b := range blocks["ini"] {
		var name string
		for _, part := range strings.Split(b, "\n# /etc/systemd/system/") {
			part = strings.TrimPrefix(part, "# /etc/systemd/system/")
			name, part, _ = strings.Cut(part, "\n")
			units[strings.TrimSpace(name)] = part
		}
	}
	if len(units) != 2 {
		t.Fatalf("want the backup service and timer in an ini block, got %v", units)
	}
	systemdVerify(t, units)

	nginx := strings.Join(blocks["nginx"], "\n")
	for _, want := range []string{"proxy_buffering off", "proxy_read_timeout", "proxy_set_header Host $host",
		"X-Forwarded-Proto $scheme", "client_max_body_size 64k", "/api/(runs/[^/]+/events|reload)"} {
		if !strings.Contains(nginx, want) {
			t.Errorf("the nginx snippet lacks %q", want)
		}
	}
	if !strings.Contains(string(doc), "labserver backup --db") {
		t.Error("the doc does not show the backup command")
	}
}

// codeBlocks returns the fenced code blocks of a Markdown text by language.
func codeBlocks(md string) map[string][]string {
	out := map[string][]string{}
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		lang, ok := strings.CutPrefix(lines[i], "```")
		if !ok || lang == "" {
			continue
		}
		var b strings.Builder
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			b.WriteString(lines[i] + "\n")
		}
		out[lang] = append(out[lang], b.String())
	}
	return out
}

// TestK8sManifest checks what the manifest is for: one replica that is
// replaced, never doubled (one SQLite writer); IPC_LOCK granted and all
// else dropped; the database on the claim the manifest declares; health
// probes on /healthz; unbuffered event streams at the ingress.
func TestK8sManifest(t *testing.T) {
	b, err := os.ReadFile("k8s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	checkEnvNames(t, "k8s.yaml", b, knownEnv(t))
	docs := map[string]map[string]any{}
	for _, part := range bytes.Split(b, []byte("\n---\n")) {
		var m map[string]any
		if err := yaml.Unmarshal(part, &m); err != nil {
			t.Fatalf("k8s.yaml: %v", err)
		}
		docs[m["kind"].(string)] = m
	}
	for _, kind := range []string{"PersistentVolumeClaim", "Deployment", "Service", "Ingress"} {
		if docs[kind] == nil {
			t.Fatalf("k8s.yaml has no %s", kind)
		}
	}
	get := func(v any, path ...string) any {
		for _, p := range path {
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[p]
		}
		return v
	}
	dep := docs["Deployment"]
	if r := get(dep, "spec", "replicas"); r != uint64(1) && r != int64(1) && r != 1 {
		t.Errorf("replicas %v (%T), want 1", r, r)
	}
	if s := get(dep, "spec", "strategy", "type"); s != "Recreate" {
		t.Errorf("strategy %v, want Recreate", s)
	}
	pod := get(dep, "spec", "template", "spec")
	containers, _ := get(pod, "containers").([]any)
	if len(containers) != 1 {
		t.Fatalf("want one container, got %d", len(containers))
	}
	c := containers[0]
	caps := get(c, "securityContext", "capabilities")
	if !slices.Equal(toStrings(get(caps, "add")), []string{"IPC_LOCK"}) || !slices.Equal(toStrings(get(caps, "drop")), []string{"ALL"}) {
		t.Errorf("capabilities %v, want drop ALL, add IPC_LOCK", caps)
	}
	env := map[string]string{}
	for _, e := range get(c, "env").([]any) {
		if v, ok := get(e, "value").(string); ok {
			env[get(e, "name").(string)] = v
		}
	}
	dbDir := filepath.Dir(env["LAB_DB"])
	claim := get(docs["PersistentVolumeClaim"], "metadata", "name")
	var volume string
	for _, v := range get(pod, "volumes").([]any) {
		if get(v, "persistentVolumeClaim", "claimName") == claim {
			volume = get(v, "name").(string)
		}
	}
	mounted := false
	for _, m := range get(c, "volumeMounts").([]any) {
		mounted = mounted || (get(m, "name") == volume && get(m, "mountPath") == dbDir)
	}
	if env["LAB_DB"] == "" || volume == "" || !mounted {
		t.Errorf("LAB_DB %q is not on the claim %v (volume %q mounted: %v)", env["LAB_DB"], claim, volume, mounted)
	}
	for _, probe := range []string{"readinessProbe", "livenessProbe"} {
		if p := get(c, probe, "httpGet", "path"); p != "/healthz" {
			t.Errorf("%s path %v, want /healthz", probe, p)
		}
	}
	if v := get(docs["Ingress"], "metadata", "annotations", "nginx.ingress.kubernetes.io/proxy-buffering"); v != "off" {
		t.Errorf("ingress proxy-buffering %v, want off (event streams)", v)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}
