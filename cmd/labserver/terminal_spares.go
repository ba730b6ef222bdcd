package main

import (
	"errors"
	"flag"
	"strconv"

	"github.com/rdmalab/rdmalab/web"
)

// Paused spare learner guests (`serve --spares`, terminal.Terminals.Spares):
// how large a class the lab keeps guests restored for, before the class
// presses Open (terminals/terminal/spares.go).

// sparesAuto is the class `--spares auto` keeps spares for: issue 31's
// class opening its terminals at once. Free memory (terminal.AutoRoom) and the
// places left under --terminals bound it on a smaller machine.
const sparesAuto = 20

func spareFlags(fset *flag.FlagSet, n *int, env func(key, def string) string) {
	*n = sparesAuto
	if v, err := parseSpares(env("LAB_SPARES", "")); err == nil {
		*n = v
	}
	fset.Func("spares", "paused learner guests kept restored for a class opening its terminals at once: auto (a class of 20), or the class size; the class less the learners in is kept, within free memory and the places --terminals leaves (logged, shown on /lab); 0: none [LAB_SPARES] (default auto)",
		func(v string) error {
			s, err := parseSpares(v)
			if err == nil {
				*n = s
			}
			return err
		})
}

// parseSpares reads "auto" or a class size; 0 is -1 for terminal.Terminals (none).
func parseSpares(v string) (int, error) {
	if v == "auto" {
		return sparesAuto, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, errors.New(`want "auto" or a class size (0: no spares)`)
	}
	if n == 0 {
		return -1, nil
	}
	return n, nil
}

// Spares is this machine's paused spares' state (web.TerminalInfo).
func (w webTerminals) Spares() web.TermSpares {
	if w.local == nil {
		return web.TermSpares{}
	}
	st := w.local.SpareStats()
	mem := w.local.GuestMemory()
	return web.TermSpares{Ready: st.Ready, Starting: st.Starting, Target: st.Target, Class: st.Class,
		Room: st.Room, Bounded: st.Bounded, Guests: mem.Guests, PSS: mem.PSS, Shared: mem.Shared()}
}

// Kept is the kept machines' disk (web.TerminalInfo); false when
// machines are not kept.
func (w webTerminals) Kept() (web.TermKept, bool) {
	if w.local == nil || w.local.Keep == nil {
		return web.TermKept{}, false
	}
	k := w.local.Keep
	bytes, n := k.Usage()
	return web.TermKept{Machines: n, Bytes: bytes, TotalBytes: k.TotalMax, Evicted: k.Evicted()}, true
}
