package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/quiz"
)

func TestImportCommand(t *testing.T) {
	f := filepath.Join(t.TempDir(), "q.txt")
	os.WriteFile(f, []byte("Pick one\nA. yes\nB. no\nANSWER: A\n\nBroken\nA. x\n"), 0o644)
	var out, errb bytes.Buffer
	if code := dispatch(context.Background(), []string{"import", "aiken", f, "--prefix", "l01/q"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "- id: l01/q1\n") || !strings.Contains(errb.String(), f+":6: question without an ANSWER") {
		t.Errorf("stdout %q\nstderr %q", out.String(), errb.String())
	}
	for _, args := range [][]string{{"import"}, {"import", "csv", f}, {"import", "gift"}, {"import", "gift", f, "--lang", "fr"}} {
		if code := dispatch(context.Background(), args, &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

// TestImportBounded is issue 28, fall 9: a file over quiz.MaxImport is
// refused before it is read (a 100 MB file took 5.8 GB), as is one that is
// not UTF-8; a signal (ctx) ends the command with nothing written (it
// ignored SIGTERM for 135 s).
func TestImportBounded(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.gift")
	f, _ := os.Create(big)
	f.Truncate(quiz.MaxImport + 1)
	f.Close()
	latin1 := filepath.Join(dir, "latin1.gift")
	os.WriteFile(latin1, []byte("::q:: Caf\xe9? {=oui ~non}\n"), 0o644)
	ok := filepath.Join(dir, "ok.gift")
	os.WriteFile(ok, []byte("::q:: 对吗？ {=对 ~错}\n"), 0o644)
	for file, want := range map[string]string{big: "larger than 8 MiB", latin1: "not UTF-8"} {
		var out, errb bytes.Buffer
		if code := dispatch(context.Background(), []string{"import", "gift", file}, &out, &errb); code != 1 || !strings.Contains(errb.String(), want) || out.Len() != 0 {
			t.Errorf("%s: exit %d, stderr %q, stdout %d bytes; want 1 and %q", filepath.Base(file), code, errb.String(), out.Len(), want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	if code := runImport(ctx, []string{"gift", ok}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "interrupted") || out.Len() != 0 {
		t.Errorf("signalled: exit %d, stderr %q, stdout %q", code, errb.String(), out.String())
	}
	out.Reset()
	if code := runImport(context.Background(), []string{"gift", ok, "--lang", "zh"}, &out, &errb); code != 0 || !strings.Contains(out.String(), `"对吗？"`) {
		t.Errorf("exit %d, stdout %q", code, out.String())
	}
}
