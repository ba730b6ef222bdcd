package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/lessons"
)

const checkUsage = `usage: labserver check [DIR]
  DIR is a course folder (lesson folders NN-slug inside) or one lesson
  folder (its course is checked, and its own findings printed).
  Without DIR: $LAB_LESSONS, else the current folder when it holds lesson
  folders, else the built-in course.
  Exit status: 0 no errors (warnings allowed), 1 errors, 2 bad usage.
`

// runCheck is `labserver check [DIR]`: print every finding of the course as
// file:line: message, exit 1 on errors and 2 on bad usage.
func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return checkWith(os.Getenv, args, stdout, stderr)
}

func checkWith(getenv func(string) string, args []string, stdout, stderr io.Writer) int {
	for _, a := range args {
		if a == "-h" || a == "-help" || a == "--help" {
			fmt.Fprint(stdout, checkUsage)
			return 0
		}
		if strings.HasPrefix(a, "-") {
			fmt.Fprintf(stderr, "labserver check: unknown flag %s\n%s", a, checkUsage)
			return 2
		}
	}
	if len(args) > 1 {
		fmt.Fprintf(stderr, "labserver check: want at most one DIR, got %q\n%s", args, checkUsage)
		return 2
	}
	dir := ""
	if len(args) == 1 {
		dir = args[0]
	} else if d := getenv("LAB_LESSONS"); d != "" {
		dir = d
	} else if looksLikeCourse(".") {
		dir = "."
	}
	only := "" // a lesson folder given: print its findings only
	if dir != "" {
		st, err := os.Stat(dir)
		if err != nil || !st.IsDir() {
			fmt.Fprintf(stderr, "labserver check: %s is not a folder\n%s", dir, checkUsage)
			return 2
		}
		if isLessonFolder(dir) && !looksLikeCourse(dir) {
			abs, _ := filepath.Abs(dir)
			only = filepath.Base(abs)
			dir = filepath.Dir(abs)
			if filepath.Base(dir) == lessons.DraftsDir { // a draft: check it beside its course
				only = lessons.DraftsDir + "/" + only
				dir = filepath.Dir(dir)
			}
		}
	}
	fsys, where := courseFS(dir)
	if only != "" {
		where = filepath.Join(dir, only)
	}
	opt := lessonOptions()
	opt.CompileC = hostCompileC()
	diags := lessons.Check(fsys, opt)
	errs, warns := 0, 0
	for _, d := range diags {
		if only != "" && d.File != only && !strings.HasPrefix(d.File, only+"/") {
			continue
		}
		if dir != "" {
			d.File = filepath.Join(dir, d.File) // a path the author's editor can open
		}
		fmt.Fprintln(stdout, d.String())
		if d.Severity == lessons.Error {
			errs++
		} else {
			warns++
		}
	}
	fmt.Fprintf(stderr, "check %s: %d error(s), %d warning(s)\n", where, errs, warns)
	if errs > 0 {
		return 1
	}
	return 0
}

// isLessonFolder reports whether dir holds a lesson page (index.*.md).
func isLessonFolder(dir string) bool {
	m, _ := filepath.Glob(filepath.Join(dir, "index.*.md"))
	m2, _ := filepath.Glob(filepath.Join(dir, "index.md"))
	return len(m)+len(m2) > 0
}

// looksLikeCourse reports whether dir holds at least one lesson folder.
func looksLikeCourse(dir string) bool {
	entries, err := fs.ReadDir(os.DirFS(dir), ".")
	if err != nil {
		return false
	}
	for _, e := range entries {
		if e.IsDir() && isLessonFolder(filepath.Join(dir, e.Name())) {
			return true
		}
	}
	return false
}

// hostCompileC compiles a :::program's C with this host's tcc, the
// compiler and headers the guest image is built from, so check finds a
// starter or solution that does not compile; nil (the check skipped,
// the guest suite still compiles every program) without tcc.
func hostCompileC() func(src []byte, libs []string) (string, error) {
	tcc, err := exec.LookPath("tcc")
	if err != nil {
		return nil
	}
	return func(src []byte, libs []string) (string, error) {
		dir, err := os.MkdirTemp("", "labcheck-")
		if err != nil {
			return "", err
		}
		defer os.RemoveAll(dir)
		if err := os.WriteFile(filepath.Join(dir, "main.c"), src, 0o600); err != nil {
			return "", err
		}
		args := []string{"-Wall", "-o", filepath.Join(dir, "prog"), "main.c"}
		for _, l := range libs {
			args = append(args, "-l"+l)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, tcc, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
}
