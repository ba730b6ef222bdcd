package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/sandbox"
)

var updateAuthoring = flag.Bool("update-authoring", false, "rewrite the generated sections of docs/authoring.md")

const authoringDoc = "../../docs/authoring.md"

// docBlock is one fenced code block of the authoring guide. The info string
// says what the test does with it: "markdown file=PATH" and "yaml
// file=PATH" are files of the example course; "snippet" is added to the
// example lesson's English page, "question" to its quiz.yaml; "broken
// file=PATH" adds a file to a copy of the course, and the next "expect"
// block lists lines `labserver check` must print for it; "syntax" and "ci"
// are shown, not checked.
type docBlock struct {
	Line int
	Lang string
	Tags map[string]string
	Body string
}

func parseDocBlocks(src string) []docBlock {
	var (
		out  []docBlock
		cur  *docBlock
		body strings.Builder
	)
	for i, line := range strings.Split(src, "\n") {
		if cur == nil {
			info, ok := strings.CutPrefix(line, "```")
			if !ok || strings.HasPrefix(info, "`") {
				continue
			}
			f := strings.Fields(info)
			cur = &docBlock{Line: i + 1, Tags: map[string]string{}}
			if len(f) > 0 {
				cur.Lang = f[0]
				for _, t := range f[1:] {
					k, v, _ := strings.Cut(t, "=")
					cur.Tags[k] = v
				}
			}
			body.Reset()
			continue
		}
		if strings.TrimRight(line, " ") == "```" {
			cur.Body = body.String()
			out = append(out, *cur)
			cur = nil
			continue
		}
		body.WriteString(line + "\n")
	}
	return out
}

// writeTree writes files (path → content) into a new temp dir.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func findings(diags []lessons.Diagnostic) []string {
	out := make([]string, len(diags))
	for i, d := range diags {
		out[i] = d.String()
	}
	return out
}

// TestAuthoringDoc keeps docs/authoring.md true: its generated sections
// match the experiment registry and the diagram list, and every example is
// checked by the real loader with the real registry.
func TestAuthoringDoc(t *testing.T) {
	raw, err := os.ReadFile(authoringDoc)
	if err != nil {
		t.Fatal(err)
	}
	src := string(raw)
	gen := regenerateAuthoring(t, src)
	if gen != src {
		if *updateAuthoring {
			if err := os.WriteFile(authoringDoc, []byte(gen), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Log("rewrote the generated sections of docs/authoring.md")
		} else {
			t.Errorf("the generated sections of docs/authoring.md are out of date (an experiment, param or diagram changed): run\n  go test ./cmd/labserver -run TestAuthoringDoc -update-authoring")
		}
	}
	blocks := parseDocBlocks(gen)

	base := map[string]string{}
	for _, b := range blocks {
		if (b.Lang == "markdown" || b.Lang == "yaml") && len(b.Tags) == 0 {
			t.Errorf("docs/authoring.md:%d: a %s example without a tag (file=, snippet, question, broken, expect, syntax, ci) is not checked", b.Line, b.Lang)
		}
		if f, ok := b.Tags["file"]; ok && !hasTag(b, "broken") {
			base[f] = b.Body
		}
	}
	if len(base) < 4 {
		t.Fatalf("the example course has only %d files", len(base))
	}
	opt := lessonOptions()
	baseDiags := lessons.Check(os.DirFS(writeTree(t, base)), opt)
	for _, d := range baseDiags {
		if d.Severity == lessons.Error {
			t.Errorf("the example course: %s", d)
		}
	}
	known := findings(baseDiags)

	const page, quizFile = "01-example/index.en.md", "01-example/quiz.yaml"
	checked := 0
	for i, b := range blocks {
		switch {
		case hasTag(b, "snippet"), hasTag(b, "question"):
			files := maps(base)
			if hasTag(b, "snippet") {
				files[page] += "\n" + b.Body
			} else {
				files[quizFile] += indent(b.Body, "  ")
			}
			got := findings(lessons.Check(os.DirFS(writeTree(t, files)), opt))
			for _, f := range got {
				if !slices.Contains(known, f) {
					t.Errorf("docs/authoring.md:%d: the example gives a finding: %s", b.Line, f)
				}
			}
			checked++
		case hasTag(b, "expect"):
			files := maps(base)
			for j := i - 1; j >= 0 && hasTag(blocks[j], "broken"); j-- {
				files[blocks[j].Tags["file"]] = blocks[j].Body
			}
			dir := writeTree(t, files)
			var out, errOut bytes.Buffer
			code := runCheck(context.Background(), []string{dir}, &out, &errOut)
			if code != 1 {
				t.Errorf("docs/authoring.md:%d: check exit %d, want 1", b.Line, code)
			}
			printed := strings.Split(strings.ReplaceAll(out.String(), dir+string(filepath.Separator), "course/"), "\n")
			for _, want := range strings.Split(strings.TrimSpace(b.Body), "\n") {
				if !slices.Contains(printed, want) {
					t.Errorf("docs/authoring.md:%d: check does not print\n  %s\nit prints:\n  %s", b.Line, want, strings.Join(printed, "\n  "))
				}
			}
			checked++
		}
	}
	if checked < 10 {
		t.Errorf("only %d examples checked", checked)
	}
}

func hasTag(b docBlock, tag string) bool { _, ok := b.Tags[tag]; return ok }

func maps(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func indent(s, prefix string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if strings.TrimSpace(l) != "" {
			b.WriteString(prefix)
		}
		b.WriteString(l)
	}
	return b.String()
}

// regenerateAuthoring rewrites the generated sections of src.
func regenerateAuthoring(t *testing.T, src string) string {
	t.Helper()
	src = replaceSection(t, src, "diagrams", "Known diagrams: "+backticked(knownDiagrams(t))+".\n")
	var b strings.Builder
	exps := experimentRegistry().List()
	sort.Slice(exps, func(i, j int) bool { return exps[i].ID < exps[j].ID })
	for _, e := range exps {
		writeExperimentDoc(&b, e)
	}
	return replaceSection(t, src, "experiments", b.String())
}

// replaceSection replaces the text between the BEGIN/END markers of name.
func replaceSection(t *testing.T, src, name, body string) string {
	t.Helper()
	re := regexp.MustCompile(`(?s)(<!-- BEGIN ` + name + ` [^\n]*-->\n).*?(<!-- END ` + name + ` -->)`)
	if !re.MatchString(src) {
		t.Fatalf("docs/authoring.md has no BEGIN/END %s markers", name)
	}
	return re.ReplaceAllLiteralString(src, re.FindStringSubmatch(src)[1]+body+re.FindStringSubmatch(src)[2])
}

// knownDiagrams asks the loader itself: an unknown id's error lists them.
func knownDiagrams(t *testing.T) []string {
	t.Helper()
	dir := writeTree(t, map[string]string{"01-x/index.en.md": "---\ntitle: x\nsummary: x\norder: 1\n---\n\n::diagram zz-no-such\n"})
	for _, d := range lessons.Check(os.DirFS(dir), lessons.Options{}) {
		if _, list, ok := strings.Cut(d.Message, "(known: "); ok {
			return strings.Split(strings.TrimSuffix(list, ")"), ", ")
		}
	}
	t.Fatal("no list of known diagrams in the loader's error")
	return nil
}

func backticked(ids []string) string {
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = "`" + id + "`"
	}
	return strings.Join(q, ", ")
}

func cell(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "|", `\|`) }

// directiveValue is a param value as an ::experiment line writes it.
func directiveValue(p sandbox.Param, v any) string {
	if p.Kind == sandbox.ParamBytes {
		if n, err := p.Coerce(v); err == nil {
			return strings.ReplaceAll(sandbox.FormatBytes(n.(int64)), " ", "")
		}
	}
	return fmt.Sprint(v)
}

func writeExperimentDoc(b *strings.Builder, e *sandbox.Experiment) {
	fmt.Fprintf(b, "### `%s` — %s\n\n", e.ID, e.Title["en"])
	needs := "host: runs on any Linux host, no RDMA device needed"
	if e.Needs == sandbox.NeedRDMA {
		needs = "rdma: runs on Soft-RoCE (the host's RDMA devices or the lab's guest)"
	}
	fmt.Fprintf(b, "%s · needs %s\n\n", e.Title["zh"], needs)
	if s := strings.TrimSpace(e.Summary["en"]); s != "" {
		fmt.Fprintf(b, "%s\n\n", s)
	}
	line := "::experiment " + e.ID
	if len(e.Params) > 0 {
		b.WriteString("| param | meaning | kind | values | default |\n|---|---|---|---|---|\n")
		for _, p := range e.Params {
			values := ""
			switch p.Kind {
			case sandbox.ParamEnum:
				var cs []string
				for _, c := range p.Choices {
					cs = append(cs, "`"+c.Value+"` "+c.Title["en"])
				}
				values = strings.Join(cs, "; ")
			case sandbox.ParamBool:
				values = "`true`, `false`"
			default:
				values = strings.TrimPrefix(p.Bounds(), "must be ")
			}
			meaning := p.Title["en"]
			if h := p.Help["en"]; h != "" {
				meaning += ": " + h
			}
			def := directiveValue(p, p.Default)
			fmt.Fprintf(b, "| `%s` | %s | %s | %s | `%s` |\n", p.Name, cell(meaning), p.Kind, cell(values), def)
			line += " " + p.Name + "=" + def
		}
		b.WriteString("\n")
	}
	if len(e.Presets) > 0 {
		var ps []string
		for _, pr := range e.Presets {
			var kv []string
			for _, p := range e.Params {
				if v, ok := pr.Values[p.Name]; ok {
					kv = append(kv, p.Name+"="+directiveValue(p, v))
				}
			}
			ps = append(ps, fmt.Sprintf("`%s` (%s)", pr.ID, strings.Join(kv, " ")))
		}
		fmt.Fprintf(b, "Presets: %s.\n\n", strings.Join(ps, "; "))
	}
	fmt.Fprintf(b, "```markdown snippet\n%s\n```\n\n", line)
}
