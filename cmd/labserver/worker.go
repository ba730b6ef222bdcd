package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"time"

	"github.com/rdmalab/rdmalab/machines/agentproc"
	"github.com/rdmalab/rdmalab/machines/vm"
	"github.com/rdmalab/rdmalab/runs/fleet"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/terminals/terminal"
)

const workerUsage = `usage: labserver worker --join nats://HOST:4222 (--token T | --nkey-seed FILE) [flags]

Runs experiments for a lab server on this machine: takes runs from the
lab's work queue, runs each here (host experiments in a labserver agent
child, RDMA ones on this machine's backend: its RDMA devices or its own
Soft-RoCE guests) and streams the events back. See docs/operations.md,
"More machines".

flags (environment fallbacks in brackets):
  --join URL        the lab's NATS address [LAB_JOIN] (tls://HOST:4222 with TLS)
  --token T         the lab's worker token [LAB_NATS_TOKEN]
  --nkey-seed FILE  this worker's nkey seed (the lab lists NAME=its public key) [LAB_NATS_NKEY_SEED]
  --ca FILE         TLS: the CA of the lab's certificate [LAB_NATS_CA]
  --name NAME       this worker's name: its key's NAME on the lab, how /lab lists it
                    (default: host name)
  --backend B       auto|host|vm|none: where RDMA runs go here [LAB_BACKEND]
  --guests N        Soft-RoCE guests (vm backend) [LAB_GUESTS] (0: one per two CPUs, as memory allows)
  --host-slots N    host experiments at once (default: one per CPU; 0 takes none)
  --terminals N     learner terminals this worker hosts for the lab, each in a Soft-RoCE
                    guest of its own: auto (from free memory and CPUs), a number, or 0
                    (none) [LAB_WORKER_TERMINALS] (default 0)
  --terminal-idle D, --idle-pause D
                    as for labserver serve, for the learner machines hosted here; give
                    the lab's values [LAB_TERMINAL_IDLE, LAB_IDLE_PAUSE] (default 10m, 30s)
  --keep-machines D, --keep-machine-max M, --keep-total-max M, --keep-stop-wait D,
  --keep-dir DIR    a learner's reclaimed terminal machine here is kept on this worker's
                    disk and restored at their next attach, as on the lab server
                    [LAB_KEEP_MACHINES …] (default: 7 days, in ./kept-machines)
`

// runWorker is `labserver worker`.
func runWorker(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("labserver worker", flag.ContinueOnError)
	fset.SetOutput(stderr)
	fset.Usage = func() { fmt.Fprint(stderr, workerUsage) }
	var cfg fleet.WorkerConfig
	var sb sandboxConfig
	fset.StringVar(&cfg.URL, "join", osEnvOr("LAB_JOIN", ""), "the lab's NATS address")
	fset.StringVar(&cfg.Token, "token", osEnvOr("LAB_NATS_TOKEN", ""), "worker token")
	fset.StringVar(&cfg.NkeySeed, "nkey-seed", osEnvOr("LAB_NATS_NKEY_SEED", ""), "nkey seed file")
	fset.StringVar(&cfg.CAFile, "ca", osEnvOr("LAB_NATS_CA", ""), "TLS CA file")
	fset.StringVar(&cfg.Name, "name", "", "worker name")
	fset.StringVar(&sb.Backend, "backend", osEnvOr("LAB_BACKEND", "auto"), "auto|host|vm|none")
	guests := fset.Int("guests", 0, "Soft-RoCE guests")
	hostSlots := fset.Int("host-slots", runtime.NumCPU(), "host experiments at once")
	terms, err := parseTerminals(osEnvOr("LAB_WORKER_TERMINALS", "0"))
	if err != nil {
		fmt.Fprintln(stderr, "labserver worker: LAB_WORKER_TERMINALS:", err)
		return 2
	}
	var keep keepConfig
	keepFlags(fset, &keep, osEnvOr)
	var pause, reclaim time.Duration
	idlePauseFlags(fset, &pause, osEnvOr)
	reclaimFlags(fset, &reclaim, osEnvOr)
	fset.Func("terminals", "learner terminals hosted here: auto, a number, or 0", func(v string) error {
		t, err := parseTerminals(v)
		if err == nil {
			terms = t
		}
		return err
	})
	if err := fset.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if cfg.URL == "" || (cfg.Token == "" && cfg.NkeySeed == "") {
		fmt.Fprint(stderr, workerUsage)
		return 2
	}
	sb.Guests = *guests
	sb.VMAccel = osEnvOr("LAB_VM_ACCEL", "auto")
	sb.VMMemory = vmMemory(osEnvOr)
	sb.VMSnapshot = osEnvOr("LAB_VM_SNAPSHOT", "") != "off"
	sb.VMSharedRAM = osEnvOr("LAB_VM_SHARED_RAM", "") != "off"
	if sb.Guests == 0 {
		sb.Guests = atoiEnv("LAB_GUESTS")
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	if cfg.Name == "" {
		cfg.Name, _ = os.Hostname()
	}
	log = log.With("worker", cfg.Name)
	// Credentials first: a refused worker should not boot guests.
	nc, err := fleet.Connect(cfg)
	if err != nil {
		fmt.Fprintln(stderr, "labserver worker:", err)
		return 1
	}
	nc.Close()
	rdma, closeRDMA, _, err := rdmaBackend(ctx, sb, log)
	if err != nil {
		fmt.Fprintln(stderr, "labserver worker: RDMA backend:", err)
		return 1
	}
	defer closeRDMA()
	cfg.Logger = log
	cfg.Backends = map[sandbox.Need]sandbox.Backend{sandbox.NeedHost: &agentproc.Agent{Nice: agentproc.HostNice}}
	cfg.Slots = map[sandbox.Need]int{sandbox.NeedHost: *hostSlots}
	if rdma.Name() != "none" {
		cfg.Backends[sandbox.NeedRDMA] = rdma
		n := 1
		if s, ok := rdma.(sandbox.Slotted); ok {
			n = s.Slots()
		}
		cfg.Slots[sandbox.NeedRDMA] = n
	}
	if terms != 0 {
		// Learner guests for the lab's terminals (fleet/term.go), beside
		// this worker's pool when it has one. A reclaimed one is kept on
		// this worker's disk (--keep-machines): the lab server sends the
		// learner's next attach back here while this worker lives, and a
		// stop saves the machines in use first (--keep-stop-wait).
		t := workerTerminals(terms, sb, rdma, pause, reclaim, log)
		t.Keep = keep.keep("", log)
		defer stopTerminals(t, keep.StopWait)
		cfg.Terms = t.Host()
	}
	if err := fleet.RunWorker(ctx, cfg); err != nil {
		fmt.Fprintln(stderr, "labserver worker:", err)
		return 1
	}
	return 0
}

// workerTerminals are the learner guests a worker hosts: n, or sized to
// the machine beside its pool's guests (auto), paused and reclaimed when
// idle as --idle-pause and --terminal-idle say: as on the lab server, whose
// --terminal-idle the learner's page says, so a worker gets the same.
func workerTerminals(n int, c sandboxConfig, rdma sandbox.Backend, pause, reclaim time.Duration, log *slog.Logger) *terminal.Terminals {
	cfg := vm.Config{Accel: c.VMAccel, MemoryMiB: c.VMMemory, Logger: log, NoSnapshot: !c.VMSnapshot, PrivateRAM: !c.VMSharedRAM}
	guests := 0
	if p, ok := rdma.(sandbox.GuestPool); ok {
		guests = p.Guests()
	}
	if n == TerminalsAuto {
		sz := terminal.AutoTerminals(guests, c.VMSharedRAM)
		n = sz.Max
		log.Info("learner terminals sized to this machine (--terminals auto)", "max", n, "sizing", sz.String())
	} else {
		log.Info("learner terminals", "max", n)
	}
	// Spares only while this machine's memory holds them, as on the lab server.
	return &terminal.Terminals{Cfg: cfg, Max: n, Room: terminal.AutoRoom(guests, c.VMSharedRAM),
		IdlePause: idlePause(pause), Idle: reclaim}
}

func atoiEnv(key string) int {
	var n int
	fmt.Sscan(os.Getenv(key), &n)
	return n
}
