package guestterm

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestRunScriptLimit: a script is told its time (LAB_CHECK_TIMEOUT) and
// stopped at it, with the limit it was given in the error, whatever the
// default for tasks is (a program's check_timeout may differ from it).
func TestRunScriptLimit(t *testing.T) {
	if _, err := os.Stat("/root"); err != nil {
		t.Skip("runScript runs scripts in /root:", err)
	}
	start := time.Now()
	out, err := runScript(context.Background(), []byte("echo budget=$LAB_CHECK_TIMEOUT lang=$LAB_LANG\nsleep 30\n"), 1, "zh")
	took := time.Since(start)
	if err == nil || err.Error() != "timed out after 1 s" {
		t.Errorf("err = %v; want timed out after 1 s", err)
	}
	if !strings.Contains(string(out), "budget=1 lang=zh") {
		t.Errorf("the script said %q; want budget=1 lang=zh", out)
	}
	// The sleep is killed with its group: far sooner than its 30 s.
	if took > 20*time.Second {
		t.Errorf("the script ran %v past its 1 s limit", took)
	}
	out, err = runScript(context.Background(), []byte("echo $LAB_CHECK_TIMEOUT\n"), 60, "en")
	if err != nil || strings.TrimSpace(string(out)) != "60" {
		t.Errorf("with 60 s: %q, %v; want 60 and no error", out, err)
	}
}
