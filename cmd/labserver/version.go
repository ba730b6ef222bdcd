package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// buildVersion is what this binary was built from, read from the build
// information the go tool embeds: the module version ("(devel)" for a
// build in a work tree, v1.2.3 for `go install …@v1.2.3`), the VCS
// revision and time, and whether the tree had uncommitted changes.
type buildVersion struct {
	Module   string // module version
	Revision string // VCS revision; "" when built without VCS information
	Time     string // the revision's commit time (RFC 3339)
	Modified bool   // the work tree had changes not committed
	Go       string // the Go toolchain
}

// readVersion reads buildVersion from the running binary.
func readVersion() buildVersion {
	v := buildVersion{Module: "unknown", Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if bi.Main.Version != "" {
		v.Module = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// String is the version in one line, e.g.
// "labserver (devel) revision 0ce9642… (2026-12-06T02:00:00Z, modified) go1.26.0".
func (v buildVersion) String() string {
	s := "labserver " + v.Module
	if v.Revision != "" {
		s += " revision " + v.Revision
		switch {
		case v.Time != "" && v.Modified:
			s += " (" + v.Time + ", modified)"
		case v.Time != "":
			s += " (" + v.Time + ")"
		case v.Modified:
			s += " (modified)"
		}
	} else {
		s += " (no VCS revision: built outside a git work tree, or with -buildvcs=false)"
	}
	return s + " " + v.Go
}

// runVersion is `labserver version`.
func runVersion(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintln(stderr, "labserver version takes no arguments")
		return 2
	}
	fmt.Fprintln(stdout, readVersion())
	return 0
}
