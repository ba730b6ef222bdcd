package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/rdmalab/rdmalab/terminals/terminal"
)

// Idle learner guests paused with their tab open (`serve --idle-pause`,
// terminal.Terminals.IdlePause; terminals/terminal/idle.go).

func idlePauseFlags(fset *flag.FlagSet, d *time.Duration, env func(key, def string) string) {
	*d = terminal.DefaultIdlePause
	if v, err := time.ParseDuration(env("LAB_IDLE_PAUSE", "")); err == nil && v >= 0 {
		*d = v
	}
	fset.Func("idle-pause", fmt.Sprintf("pause a learner's guest, tab open, after this long with no keystroke, no output and an idle guest; the next keystroke resumes it in milliseconds; 0: never [LAB_IDLE_PAUSE] (default %s)", terminal.DefaultIdlePause),
		func(v string) error {
			t, err := time.ParseDuration(v)
			if err != nil || t < 0 {
				return fmt.Errorf("want a duration such as 3m (0: never)")
			}
			*d = t
			return nil
		})
}

// idlePause is d as terminal.Terminals.IdlePause (0 there is the default,
// below 0 never).
func idlePause(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
