package lessons

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/zhcheck"
)

// TestProgramsLoad: a :::program becomes a segment and Lesson.Programs
// with its files and settings, the same in both languages.
func TestProgramsLoad(t *testing.T) {
	files := map[string]string{
		"p/starter.c": "int main(void){return 1;}\n", "p/solution.c": "int main(void){return 0;}\n",
		"p/check.sh": "#!/bin/sh\ntest \"$LAB_EXIT\" = 0\n", "p/program.yaml": "timeout: 20\nlibs: [ibverbs, rdmacm]\npeer: peers/peer.c\npeer_args: [10.0.0.2, \"7471\"]\nranks: 4\n" +
			"hints:\n  - en: Open the device first.\n    zh: 先打开设备。\n  - {en: Then `ibv_reg_mr`., zh: 再调用 `ibv_reg_mr`。}\n",
		"peers/peer.c":       "int main(void){return 0;}\n",
		"peers/peer.zh.yaml": "- {re: 'ready', zh: 准备好了, example: ready}\n",
	}
	c, err := Load(taskCourse(":::program first p\nWrite **it**.\n:::\n", ":::program first p\n写出**它**。\n:::\n", files), Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := c.Lesson("01-t")
	p := l.Program("first")
	if p == nil || len(l.Programs) != 1 {
		t.Fatalf("programs %+v", l.Programs)
	}
	if p.Config.Timeout != 20 || p.Config.Ranks != 4 || p.Config.Peer != "peers/peer.c" || string(p.Peer) != files["peers/peer.c"] ||
		len(p.Config.Libs) != 2 || p.Config.PeerArgs[1] != "7471" || p.Config.SolutionAfter != 3 || string(p.Solution) != files["p/solution.c"] ||
		len(p.Config.Hints) != 2 || p.Config.Hints[0]["zh"] != "先打开设备。" || p.Config.Hints[1]["en"] != "Then `ibv_reg_mr`." {
		t.Errorf("program %+v", p)
	}
	for lang, want := range map[string]string{"en": "Write <strong>it</strong>", "zh": "写出<strong>它</strong>"} {
		found := false
		for _, s := range l.Page(lang).Body {
			if s.Kind == SegProgram && s.ID == "first" && s.Script == "p" && strings.Contains(string(s.HTML), want) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no program segment with its text", lang)
		}
	}
}

// TestProgramsCheck: what check says, at the directive's line, for
// missing files, bad settings, folders outside the lesson, and a starter
// that does not compile (Options.CompileC).
func TestProgramsCheck(t *testing.T) {
	good := map[string]string{"p/starter.c": "int main(void){return 1;}\n", "p/solution.c": "int main(void){return 0;}\n", "p/check.sh": "exit 0\n"}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range good {
			m[a] = b
		}
		if v == "" {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name, dir string
		files     map[string]string
		want      string
	}{
		{"no solution", "p", with("p/solution.c", ""), "index.en.md:9: :::program x: no solution 01-t/p/solution.c"},
		{"no check", "p", with("p/check.sh", ""), "no verify script 01-t/p/check.sh"},
		{"outside", "../q", good, `folder "../q" must be a plain path inside the lesson folder`},
		{"bad yaml", "p", with("p/program.yaml", "timeout: 99\n"), "timeout 99 must be 1 to 30 seconds"},
		{"check too long", "p", with("p/program.yaml", "check_timeout: 91\n"), "check_timeout 91 must be 1 to 90 seconds"},
		{"unknown key", "p", with("p/program.yaml", "timeot: 9\n"), "01-t/p/program.yaml"},
		{"bad lib", "p", with("p/program.yaml", "libs: [ssl]\n"), `library "ssl" is not one of`},
		{"no peer", "p", with("p/program.yaml", "peer: peers/none.c\n"), "no peer program 01-t/peers/none.c"},
		{"bad arg", "p", with("p/program.yaml", "args: [\"$(reboot)\"]\n"), "letters, digits"},
		{"hint without zh", "p", with("p/program.yaml", "hints:\n  - en: Open the device first.\n"), "01-t/p/program.yaml: hint 1 has no zh text: every hint needs zh and en"},
		{"hint with an empty en", "p", with("p/program.yaml", "hints:\n  - {en: Open it., zh: 先打开设备。}\n  - {en: \" \", zh: 再注册内存。}\n"), "hint 2 has no en text"},
		{"hint in another language", "p", with("p/program.yaml", "hints:\n  - {en: Open it., zh: 先打开设备。, fr: Ouvrez.}\n"), `hint 1: language "fr" is not one of zh, en`},
		{"one rank", "p", with("p/program.yaml", "ranks: 1\n"), "ranks 1 must be 2 to 8 (leave it out for one copy)"},
		{"too many ranks", "p", with("p/program.yaml", "ranks: 9\n"), "ranks 9 must be 2 to 8"},
		{"starter does not compile", "p", with("p/starter.c", "int main(void){ int x = ; }\n"), "01-t/p/starter.c does not compile: main.c:1: error: identifier expected"},
	}
	compile := func(src []byte, libs []string) (string, error) {
		if strings.Contains(string(src), "= ;") {
			return "main.c:1: error: identifier expected\n", errors.New("exit status 1")
		}
		return "", nil
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := ":::program x " + tc.dir + "\nText.\n:::\n"
			diags := Check(taskCourse(body, body, tc.files), Options{CompileC: compile})
			var lines []string
			for _, d := range diags {
				lines = append(lines, d.String())
			}
			got := strings.Join(lines, "\n")
			if !strings.Contains(got, tc.want) {
				t.Errorf("findings:\n%s\nwant one with %q", got, tc.want)
			}
		})
	}
}

// TestBuiltinProgramHints: the built-in exercises of lessons 03, 04 and 09
// have hints, each in both languages, the Chinese written with Chinese
// punctuation (code spans aside, where C is C).
var zhGap = regexp.MustCompile(`\p{Han}\s+\p{Han}|[，。：；（）、“”]\s+|\s+[，。：；（）、“”]`)

func TestBuiltinProgramHints(t *testing.T) {
	c, err := Load(Builtin, Options{})
	if err != nil {
		t.Fatal(err)
	}
	code := regexp.MustCompile("`[^`]*`")
	for _, slug := range []string{"03-verbs-lifecycle", "04-first-program", "05-see-the-wire", "09-ring-allreduce"} {
		l := c.Lesson(slug)
		if l == nil || len(l.Programs) == 0 {
			t.Fatalf("%s: no programs", slug)
		}
		for _, p := range l.Programs {
			if len(p.Config.Hints) < 2 {
				t.Errorf("%s/%s: %d hints, want at least 2", slug, p.ID, len(p.Config.Hints))
			}
			for i, h := range p.Config.Hints {
				if leaks := zhcheck.Leaks(code.ReplaceAllString(h["zh"], "C")); len(leaks) > 0 {
					t.Errorf("%s/%s hint %d (zh): %q", slug, p.ID, i+1, leaks)
				}
				if prose := zhcheck.Prose(code.ReplaceAllString(h["zh"], "C")); len(prose) > 0 {
					t.Errorf("%s/%s hint %d (zh) has English prose: %q", slug, p.ID, i+1, prose)
				}
				// A folded YAML line break is a space: between two Chinese
				// characters or beside Chinese punctuation it shows.
				if m := zhGap.FindString(h["zh"]); m != "" {
					t.Errorf("%s/%s hint %d (zh): a space in %q", slug, p.ID, i+1, m)
				}
			}
		}
	}
}
