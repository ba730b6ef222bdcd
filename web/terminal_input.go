package web

import (
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/rdmalab/rdmalab"
)

// tabInput is what a terminal tab sends, kept until the shell is there:
// its window size, and the keystrokes typed while the machine starts (at
// most earlyKeysMax bytes, then sent in order). A keystroke is delivered
// or the learner is told (say), never dropped silently: those beyond the
// bound before the shell, and those the guest dropped because the shell
// was not reading its input (rdmalab.ErrKeysDropped), each said once per
// spell.
type tabInput struct {
	say func(key string) // tells the tab a terminalStrings key as a status line

	mu         sync.Mutex
	att        rdmalab.TermConn // nil until attached
	rows, cols uint16
	early      []byte
	earlyLost  bool      // keys beyond earlyKeysMax were not kept
	saidDrop   time.Time // when a guest's drop was last said
}

// earlyKeysMax bounds the keystrokes kept before the shell is there: a
// pasted line or two, not a file.
const earlyKeysMax = 4 << 10

// dropSayEvery is how often a spell of dropped keystrokes is said at most.
const dropSayEvery = 5 * time.Second

// keys delivers keystrokes, or keeps them until attach.
func (in *tabInput) keys(b []byte) {
	in.mu.Lock()
	a := in.att
	if a == nil {
		if len(in.early)+len(b) <= earlyKeysMax {
			in.early = append(in.early, b...)
		} else {
			in.earlyLost = true
		}
		in.mu.Unlock()
		return
	}
	in.mu.Unlock()
	in.write(a, b)
}

// write sends b to a and says a drop the guest reported.
func (in *tabInput) write(a rdmalab.TermConn, b []byte) { in.said(a.Write(b)) }

// said tells the tab of a drop err reports, at most every dropSayEvery.
func (in *tabInput) said(err error) {
	if !errors.Is(err, rdmalab.ErrKeysDropped) {
		return
	}
	in.mu.Lock()
	say := time.Since(in.saidDrop) >= dropSayEvery
	if say {
		in.saidDrop = time.Now()
	}
	in.mu.Unlock()
	if say {
		in.say("term.keys.dropped")
	}
}

// size sets the window size: kept before attach, sent after.
func (in *tabInput) size(rows, cols uint16) {
	in.mu.Lock()
	a := in.att
	if a == nil {
		in.rows, in.cols = dim(strconv.Itoa(int(rows)), in.rows), dim(strconv.Itoa(int(cols)), in.cols)
	}
	in.mu.Unlock()
	if a != nil {
		_ = a.Resize(rows, cols)
	}
}

// dims is the window size kept so far.
func (in *tabInput) dims() (rows, cols uint16) {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.rows, in.cols
}

// attach makes a the shell keys go to: the size changed since r0×c0 and
// the keys kept so far go first, in order.
func (in *tabInput) attach(a rdmalab.TermConn, r0, c0 uint16) {
	in.mu.Lock()
	if in.rows != r0 || in.cols != c0 {
		_ = a.Resize(in.rows, in.cols)
	}
	early, lost := in.early, in.earlyLost
	in.early, in.earlyLost = nil, false
	// Keys typed now wait for these: the lock is held across the write.
	var err error
	if len(early) > 0 {
		err = a.Write(early)
	}
	in.att = a
	in.mu.Unlock()
	in.said(err)
	if lost {
		in.say("term.keys.early")
	}
}

// detach: keys wait again (a lost machine is being replaced).
func (in *tabInput) detach() {
	in.mu.Lock()
	in.att = nil
	in.mu.Unlock()
}
