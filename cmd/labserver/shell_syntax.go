package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// shellSyntax reads a :::task verify script with `sh -n` (parse, run
// nothing) on the host: Debian's /bin/sh is dash, the same POSIX shell
// family as the guest's /bin/sh. It returns the line and message of the
// first syntax error. A host without /bin/sh skips the check (err nil):
// the script still runs in the guest, where the learner would see it fail.
func shellSyntax(script []byte) (int, string, error) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		return 0, "", nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, sh, "-n")
	cmd.Stdin = bytes.NewReader(script)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var exit *exec.ExitError
	if err == nil || !errors.As(err, &exit) {
		return 0, "", nil // passed, or sh could not run here: not the author's error
	}
	msg := strings.TrimSpace(out.String())
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	line := 0
	// dash: "sh: 3: Syntax error: end of file unexpected (expecting "fi")";
	// bash: "sh: line 3: syntax error …".
	if m := shLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[2])
		msg = strings.TrimSpace(m[3])
	}
	if msg == "" {
		msg = fmt.Sprintf("sh -n exited with %d", exit.ExitCode())
	}
	return line, msg, errors.New(msg)
}

var shLine = regexp.MustCompile(`^[^:]*: (line )?(\d+): (.*)$`)
