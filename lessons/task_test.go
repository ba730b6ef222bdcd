package lessons

import (
	"strings"
	"testing"
	"testing/fstest"
)

func taskCourse(en, zh string, files map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{
		"01-t/index.en.md": {Data: []byte("---\ntitle: T\nsummary: S.\norder: 1\n---\n\n## Do {#do}\n\n" + en)},
		"01-t/index.zh.md": {Data: []byte("---\ntitle: 任务\nsummary: 摘要。\norder: 1\n---\n\n## 做 {#do}\n\n" + zh)},
	}
	for k, v := range files {
		fsys["01-t/"+k] = &fstest.MapFile{Data: []byte(v)}
	}
	return fsys
}

// TestTasksLoad: a lesson's tasks become segments with their text and
// Lesson.Tasks with their scripts, the same in both languages.
func TestTasksLoad(t *testing.T) {
	en := "::terminal\n\n:::task memlock tasks/memlock.sh\nRaise it: `ulimit -l 65536`.\n:::\n\n:::task bw tasks/bw.sh\nRun **ib_write_bw**.\n:::\n"
	zh := "::terminal\n\n:::task memlock tasks/memlock.sh\n调高上限：`ulimit -l 65536`。\n:::\n\n:::task bw tasks/bw.sh\n运行 **ib_write_bw**。\n:::\n"
	c, err := Load(taskCourse(en, zh, map[string]string{"tasks/memlock.sh": "#!/bin/sh\nexit 0\n", "tasks/bw.sh": "test -s /root/bw.txt\n"}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := c.Lesson("01-t")
	if len(l.Tasks) != 2 || l.Tasks[0].ID != "memlock" || l.Tasks[1].ID != "bw" {
		t.Fatalf("tasks %+v", l.Tasks)
	}
	if got := string(l.Task("bw").Script); got != "test -s /root/bw.txt\n" || l.Task("bw").Path != "tasks/bw.sh" {
		t.Errorf("bw script %q path %q", got, l.Task("bw").Path)
	}
	if l.Task("memlock").Setup != nil || len(l.Setups()) != 0 {
		t.Errorf("a task without setup= has a setup: %q", l.Task("memlock").Setup)
	}
	if l.Task("nope") != nil {
		t.Error("unknown task found")
	}
	for lang, want := range map[string]string{"en": "<strong>ib_write_bw</strong>", "zh": "运行 <strong>ib_write_bw</strong>"} {
		var segs []Segment
		for _, s := range l.Page(lang).Body {
			if s.Kind == SegTask {
				segs = append(segs, s)
			}
		}
		if len(segs) != 2 || segs[1].ID != "bw" || segs[1].Script != "tasks/bw.sh" || !strings.Contains(string(segs[1].HTML), want) {
			t.Errorf("%s task segments %+v", lang, segs)
		}
		for _, s := range l.Page(lang).Body {
			if s.Kind == SegHTML && strings.Contains(string(s.HTML), "ulimit -l 65536") {
				t.Errorf("%s: the task's text leaked into the page's HTML outside the task", lang)
			}
		}
	}
}

// TestTaskSetupLoad: setup= gives the task a setup script, the same in
// both languages, listed by Lesson.Setups.
func TestTaskSetupLoad(t *testing.T) {
	en := "::terminal\n\n:::task nv tasks/nv.sh setup=tasks/target.sh\nConnect.\n:::\n"
	zh := "::terminal\n\n:::task nv tasks/nv.sh setup=tasks/target.sh\n连接。\n:::\n"
	c, err := Load(taskCourse(en, zh, map[string]string{"tasks/nv.sh": "exit 0\n", "tasks/target.sh": "modprobe nvmet_rdma\n"}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := c.Lesson("01-t")
	task := l.Task("nv")
	if task == nil || task.SetupPath != "tasks/target.sh" || string(task.Setup) != "modprobe nvmet_rdma\n" || string(task.Script) != "exit 0\n" {
		t.Fatalf("task %+v", task)
	}
	if s := l.Setups(); len(s) != 1 || string(s[0]) != "modprobe nvmet_rdma\n" {
		t.Errorf("Setups %q", s)
	}
}

// TestTasksCheck: mistakes across languages and mistyped containers.
func TestTasksCheck(t *testing.T) {
	ok := "#!/bin/sh\nexit 0\n"
	tests := []struct {
		name, en, zh string
		files        map[string]string
		want         string
	}{
		{"script differs", "::terminal\n\n:::task a tasks/a.sh\nA.\n:::\n", "::terminal\n\n:::task a tasks/b.sh\n甲。\n:::\n",
			map[string]string{"tasks/a.sh": ok, "tasks/b.sh": ok},
			"01-t/index.en.md:11: :::task a tasks/a.sh differs from 01-t/index.zh.md:11 (:::task a tasks/b.sh)"},
		{"setup differs", "::terminal\n\n:::task a tasks/a.sh setup=tasks/s.sh\nA.\n:::\n", "::terminal\n\n:::task a tasks/a.sh\n甲。\n:::\n",
			map[string]string{"tasks/a.sh": ok, "tasks/s.sh": ok},
			"01-t/index.en.md:11: :::task a: setup \"tasks/s.sh\" differs from 01-t/index.zh.md:11 (setup \"\")"},
		{"third word not setup=", "::terminal\n\n:::task a tasks/a.sh tasks/s.sh\nA.\n:::\n", "::terminal\n\n:::task a tasks/a.sh tasks/s.sh\n甲。\n:::\n",
			map[string]string{"tasks/a.sh": ok, "tasks/s.sh": ok},
			"01-t/index.en.md:11: :::task: the third word must be setup=tasks/SETUP.sh"},
		{"setup outside the lesson", "::terminal\n\n:::task a tasks/a.sh setup=../x.sh\nA.\n:::\n", "::terminal\n\n:::task a tasks/a.sh setup=../x.sh\n甲。\n:::\n",
			map[string]string{"tasks/a.sh": ok},
			"01-t/index.en.md:11: :::task a: setup: script \"../x.sh\" must be a plain path inside the lesson folder"},
		{"indented", "::terminal\n\n  :::task a tasks/a.sh\nA.\n:::\n", "::terminal\n",
			map[string]string{"tasks/a.sh": ok},
			"01-t/index.en.md:11: \":::task a tasks/a.sh\" is shown as text, not run as a directive: a directive must start at column 1: remove the indentation before :::task"},
		{"symlink-free absolute", "::terminal\n\n:::task a /etc/passwd\nA.\n:::\n", "::terminal\n\n:::task a /etc/passwd\n甲。\n:::\n",
			nil, "01-t/index.en.md:11: :::task a: script \"/etc/passwd\" must be a path relative to the lesson folder"},
		{"env sh is fine, python is not", "::terminal\n\n:::task a tasks/a.sh\nA.\n:::\n:::task b tasks/b.py\nB.\n:::\n", "::terminal\n\n:::task a tasks/a.sh\n甲。\n:::\n:::task b tasks/b.py\n乙。\n:::\n",
			map[string]string{"tasks/a.sh": "#!/usr/bin/env sh\nexit 0\n", "tasks/b.py": "#!/usr/bin/python3\n"},
			"01-t/index.en.md:14: :::task b: verify script 01-t/tasks/b.py starts with \"#!/usr/bin/python3\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var all []string
			for _, d := range Check(taskCourse(tt.en, tt.zh, tt.files), Options{}) {
				all = append(all, d.String())
			}
			got := strings.Join(all, "\n")
			if !strings.Contains(got, tt.want) {
				t.Errorf("diagnostics:\n%s\nwant a line with %q", got, tt.want)
			}
			if strings.Count(got, ":::task a:") > 1 && tt.name == "env sh is fine, python is not" {
				t.Errorf("#!/usr/bin/env sh refused:\n%s", got)
			}
		})
	}
}
