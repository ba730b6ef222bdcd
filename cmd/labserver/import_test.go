package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
