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

// reclaimFlags is `serve --terminal-idle`: how long a learner's machine
// may go without a keystroke, a check or a program run before it is
// reclaimed (kept to disk with --keep-machines, else discarded); the
// terminal's page says the time. A lab whose lessons run long commands
// may want more; a crowded lab less.
func reclaimFlags(fset *flag.FlagSet, d *time.Duration, env func(key, def string) string) {
	*d = terminal.DefaultIdle
	if v, err := time.ParseDuration(env("LAB_TERMINAL_IDLE", "")); err == nil && v >= time.Minute {
		*d = v
	}
	fset.Func("terminal-idle", fmt.Sprintf("reclaim a learner's machine after this long with no keystroke, check or program run (kept with --keep-machines, else discarded); at least 1m [LAB_TERMINAL_IDLE] (default %s)", terminal.DefaultIdle),
		func(v string) error {
			t, err := time.ParseDuration(v)
			if err != nil || t < time.Minute {
				return fmt.Errorf("want a duration of at least 1m, such as 30m")
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
