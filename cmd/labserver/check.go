package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/rdmalab/rdmalab/lessons"
)

// runCheck is `labserver check [DIR]`: print every finding of the course in
// DIR (default: the built-in course) as file:line: message, exit 1 on errors.
func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 1 {
		fmt.Fprintf(stderr, "labserver check: want at most one DIR, got %q\n", args)
		return 2
	}
	dir := ""
	if len(args) == 1 {
		dir = args[0]
	}
	fsys, where := courseFS(dir)
	diags := lessons.Check(fsys, lessonOptions())
	errs, warns := 0, 0
	for _, d := range diags {
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
