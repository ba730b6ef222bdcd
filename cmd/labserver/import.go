package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"unicode/utf8"

	"github.com/rdmalab/rdmalab/quiz"
)

const importUsage = `usage: labserver import aiken|gift FILE [--prefix ID-PREFIX] [--lang zh|en]
  Convert Moodle questions (Aiken, or GIFT single/multiple choice and
  numeric) into quiz.yaml text on standard output. What does not convert is
  reported on standard error as FILE:line: message. Then run
  labserver check: Aiken has no explanations, and quiz.yaml needs one.
  --prefix   start of every question id (default "imported/q": imported/q1, …)
  --lang     language of the texts (default en)
  FILE is UTF-8 text of at most 8 MiB.
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
	data, err := readImport(files[0])
	if err != nil {
		fmt.Fprintln(stderr, "labserver import:", err)
		return 1
	}
	if !utf8.Valid(data) {
		fmt.Fprintf(stderr, "labserver import: %s is not UTF-8 text (save it as UTF-8 and import it again)\n", files[0])
		return 1
	}
	// The conversion is linear in the input and the input is bounded, but
	// SIGINT/SIGTERM (ctx) end the command at once, whatever it is doing.
	type result struct {
		out      string
		findings []quiz.Finding
	}
	done := make(chan result, 1)
	go func() {
		var r result
		if format == "aiken" {
			r.out, r.findings = quiz.ImportAiken(string(data), *prefix, *lang)
		} else {
			r.out, r.findings = quiz.ImportGIFT(string(data), *prefix, *lang)
		}
		done <- r
	}()
	var out string
	var findings []quiz.Finding
	if ctx.Err() != nil { // signalled while reading
		fmt.Fprintln(stderr, "labserver import: interrupted; nothing written")
		return 1
	}
	select {
	case <-ctx.Done():
		fmt.Fprintln(stderr, "labserver import: interrupted; nothing written")
		return 1
	case r := <-done:
		out, findings = r.out, r.findings
	}
	for _, f := range findings {
		fmt.Fprintf(stderr, "%s:%d: %s\n", files[0], f.Line, f.Message)
	}
	fmt.Fprint(stdout, out)
	return 0
}

// readImport reads file, refusing one larger than quiz.MaxImport before
// reading it (a 100 MB file once took 5.8 GB).
func readImport(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, quiz.MaxImport+1))
	if err != nil {
		return nil, err
	}
	if len(data) > quiz.MaxImport {
		return nil, fmt.Errorf("%s is larger than %d MiB: a question bank is not that big (split it, or check that it is the right file)", file, quiz.MaxImport>>20)
	}
	return data, nil
}
