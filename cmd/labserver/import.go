package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/rdmalab/rdmalab/quiz"
)

const importUsage = `usage: labserver import aiken|gift FILE [--prefix ID-PREFIX] [--lang zh|en]
  Convert Moodle questions (Aiken, or GIFT single/multiple choice and
  numeric) into quiz.yaml text on standard output. What does not convert is
  reported on standard error as FILE:line: message. Then run
  labserver check: Aiken has no explanations, and quiz.yaml needs one.
  --prefix   start of every question id (default "imported/q": imported/q1, …)
  --lang     language of the texts (default en)
`

// runImport is `labserver import aiken|gift FILE`.
func runImport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "aiken" && args[0] != "gift") {
		fmt.Fprint(stderr, importUsage)
		return 2
	}
	format := args[0]
	fset := flag.NewFlagSet("labserver import", flag.ContinueOnError)
	fset.SetOutput(stderr)
	fset.Usage = func() { fmt.Fprint(stderr, importUsage) }
	prefix := fset.String("prefix", "imported/q", "question id prefix")
	lang := fset.String("lang", "en", "language of the texts")
	files, code, ok := parseInterleaved(fset, args[1:])
	if !ok {
		return code
	}
	if len(files) != 1 || (*lang != "zh" && *lang != "en") {
		fmt.Fprint(stderr, importUsage)
		return 2
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		fmt.Fprintln(stderr, "labserver import:", err)
		return 1
	}
	var (
		out      string
		findings []quiz.Finding
	)
	if format == "aiken" {
		out, findings = quiz.ImportAiken(string(data), *prefix, *lang)
	} else {
		out, findings = quiz.ImportGIFT(string(data), *prefix, *lang)
	}
	for _, f := range findings {
		fmt.Fprintf(stderr, "%s:%d: %s\n", files[0], f.Line, f.Message)
	}
	fmt.Fprint(stdout, out)
	return 0
}
