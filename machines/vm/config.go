package vm

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"
)

// Config says how the host builds and runs the lab guest. Zero fields take
// the defaults of Defaults.
type Config struct {
	Dir         string        // image cache directory (DefaultDir)
	Agent       string        // the guest's agent binary (vmimage.AgentBinary: labagent beside this executable)
	QEMU        string        // QEMU binary ("qemu-system-x86_64")
	Accel       string        // auto|kvm|tcg ("auto": KVM when it really works, else TCG)
	MemoryMiB   int           // guest RAM (256; 112 is the measured minimum)
	CPUs        int           // guest vCPUs (2)
	BootTimeout time.Duration // QEMU start → agent hello (60 s)
	PingEvery   time.Duration // health ping period (5 s)
	PingTimeout time.Duration // a ping unanswered this long means hung (30 s)
	Append      string        // extra kernel parameters
	Logger      *slog.Logger  // nil discards
	Progress    io.Writer     // image build progress lines; nil = quiet

	// Nice is the host scheduling niceness of the guest's QEMU (0: as
	// labserver). Learner terminals' guests run at 10, so however busy a
	// learner keeps theirs, the experiment guests get the CPU first.
	Nice int

	// Learner: the guest is a learner's own (package terminal), where the learner
	// is root: an agent that restarts there may not be ours, so the host
	// discards the guest instead of talking on to it.
	Learner bool

	// NoSnapshot: boot every guest instead of restoring the snapshot of the
	// first one (LAB_VM_SNAPSHOT=off).
	NoSnapshot bool

	// PrivateRAM: every guest holds all of its RAM itself, as before
	// guests shared the snapshot's (LAB_VM_SHARED_RAM=off). By default a
	// guest restored from the snapshot maps the snapshot's RAM file
	// copy-on-write (sharedram.go): what it has not written stays one copy
	// in the page cache for all guests.
	PrivateRAM bool

	// KVMProbe is how long a first KVM boot (auto mode, no verdict
	// remembered yet) may show no progress on the console before the
	// backend gives KVM up and boots with TCG (2 s).
	KVMProbe time.Duration

	// ConsoleMax caps console.log in bytes (0: 1 MiB, consoleMax; tests
	// set less).
	ConsoleMax int64

	progressWithin time.Duration // set by the backend for the KVM probe
}

// DefaultDir is where images go: $LAB_VM_DIR, else $XDG_CACHE_HOME/rdmalab,
// else ./.cache/vm.
func DefaultDir() string {
	if d := os.Getenv("LAB_VM_DIR"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "rdmalab")
	}
	return filepath.Join(".cache", "vm")
}

// defaultCPUs is a guest's vCPUs unless Config.CPUs says otherwise.
const defaultCPUs = 2

// WithDefaults is c with its zero fields filled.
func (c Config) WithDefaults() Config {
	if c.Dir == "" {
		c.Dir = DefaultDir()
	}
	if c.QEMU == "" {
		c.QEMU = "qemu-system-x86_64"
	}
	if c.Accel == "" {
		c.Accel = "auto"
	}
	if c.MemoryMiB == 0 {
		c.MemoryMiB = 256
	}
	if c.CPUs == 0 {
		c.CPUs = defaultCPUs
	}
	if c.BootTimeout == 0 {
		c.BootTimeout = 60 * time.Second
	}
	if c.KVMProbe == 0 {
		c.KVMProbe = 2 * time.Second
	}
	if c.PingEvery == 0 {
		c.PingEvery = 5 * time.Second
	}
	if c.PingTimeout == 0 {
		c.PingTimeout = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}
