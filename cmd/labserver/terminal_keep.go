package main

import (
	"context"
	"flag"
	"log/slog"
	"path/filepath"
	"strconv"
	"time"

	"github.com/rdmalab/rdmalab/terminals/terminal"
)

// Kept machines (terminal.Keep): a learner's terminal guest, reclaimed after its
// idle time, is saved (QEMU migration, zstd) and restored at their next
// attach. The admin sets how long a machine waits, its size cap and where
// the files go.
type keepConfig struct {
	Expire   time.Duration // LAB_KEEP_MACHINES: how long a reclaimed machine waits; 0: not kept
	MaxMiB   int           // LAB_KEEP_MACHINE_MAX: one learner's saved state at most
	TotalMiB int           // LAB_KEEP_TOTAL_MAX: all kept machines together at most (the largest address's oldest deleted first; a quarter of it per address); 0: no bound
	StopWait time.Duration // LAB_KEEP_STOP_WAIT: how long a stop may take saving the machines in use; 0: not saved
	Dir      string        // LAB_KEEP_DIR: "" = kept-machines beside the database
}

func keepFlags(fset *flag.FlagSet, c *keepConfig, env func(key, def string) string) {
	week := 7 * 24 * time.Hour
	expire, err := time.ParseDuration(env("LAB_KEEP_MACHINES", week.String()))
	if err != nil {
		expire = week
	}
	maxMiB, err := strconv.Atoi(env("LAB_KEEP_MACHINE_MAX", "64"))
	if err != nil || maxMiB <= 0 {
		maxMiB = 64
	}
	fset.DurationVar(&c.Expire, "keep-machines", expire,
		"how long a learner's reclaimed terminal machine is kept (saved to disk, restored at their next attach); 0: not kept [LAB_KEEP_MACHINES]")
	fset.IntVar(&c.MaxMiB, "keep-machine-max", maxMiB,
		"MiB of disk one learner's kept machine may take (compressed); a larger one is not kept and the learner is told [LAB_KEEP_MACHINE_MAX]")
	totalMiB, err := strconv.Atoi(env("LAB_KEEP_TOTAL_MAX", "4096"))
	if err != nil || totalMiB < 0 {
		totalMiB = 4096
	}
	stopWait, err := time.ParseDuration(env("LAB_KEEP_STOP_WAIT", "60s"))
	if err != nil || stopWait < 0 {
		stopWait = time.Minute
	}
	fset.IntVar(&c.TotalMiB, "keep-total-max", totalMiB,
		"MiB of disk all kept machines may take together, a quarter of it those of one client address; over it the oldest of the address holding the most are deleted first (logged, the learner told; shown on /lab); 0: no bound [LAB_KEEP_TOTAL_MAX]")
	fset.DurationVar(&c.StopWait, "keep-stop-wait", stopWait,
		"on SIGTERM/SIGINT, how long labserver may take saving the terminal machines in use before it exits (what is not saved by then is logged); 0: not saved [LAB_KEEP_STOP_WAIT]")
	fset.StringVar(&c.Dir, "keep-dir", env("LAB_KEEP_DIR", ""),
		"where kept machines go (default: kept-machines beside --db) [LAB_KEEP_DIR]")
}

// keep returns the kept machines' store, nil when they are off. By
// default it is beside the database (dbPath; "": in the working
// directory, a worker's).
func (c keepConfig) keep(dbPath string, log *slog.Logger) *terminal.Keep {
	if c.Expire <= 0 {
		log.Info("learner machines are not kept: a reclaimed terminal guest is gone (--keep-machines 0)")
		return nil
	}
	dir := c.Dir
	if dir == "" {
		dir = filepath.Join(filepath.Dir(dbPath), "kept-machines")
	}
	// One client address's machines may take a quarter of the budget: 64
	// fresh cookies of one address then evict no other address's machine
	// (issue 43), and a class behind one NAT still keeps its machines under
	// the default budget: about 1 MB each plus what the learner wrote when
	// kept as differences from the snapshot, 33 MB when kept whole (vm's
	// keepdiff.go says when; raise --keep-total-max for more).
	k := &terminal.Keep{Dir: dir, MaxBytes: int64(c.MaxMiB) << 20, Expire: c.Expire, TotalMax: int64(c.TotalMiB) << 20,
		ClientMax: int64(c.TotalMiB) << 20 / 4, Logger: log}
	k.Enforce() // a budget lowered since the last start
	bytes, n := k.Usage()
	log.Info("learner machines are kept when reclaimed", "dir", dir, "max_mib", c.MaxMiB, "expire", c.Expire,
		"total_max_mib", c.TotalMiB, "addr_max_mib", c.TotalMiB/4, "kept_now", n, "disk_mib", bytes>>20, "saved_on_stop_within", c.StopWait)
	return k
}

// closeTerminals stops the learner terminals, saving the machines in use
// first (within --keep-stop-wait) when machines are kept.
func (m *Main) closeTerminals() error { return stopTerminals(m.Terms, m.Config.Keep.StopWait) }

// stopTerminals stops t, saving the machines in use first within wait
// when machines are kept (serve's and a worker's).
func stopTerminals(t *terminal.Terminals, wait time.Duration) error {
	if t.Keep == nil || wait <= 0 {
		return t.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	return t.Shutdown(ctx)
}
