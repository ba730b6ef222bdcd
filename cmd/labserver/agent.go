package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rdmalab/rdmalab/cmd/internal/agentcmd"
	"github.com/rdmalab/rdmalab/machines/agentproc"
	"github.com/rdmalab/rdmalab/runs/fleet"
	"github.com/rdmalab/rdmalab/runs/runner"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/runhub"
)

// experimentRegistry is every experiment this binary can run; serve (for
// the API and lesson checks) and the agents (to run them) must agree on it.
func experimentRegistry() *sandbox.Registry { return agentcmd.Registry() }

// runAgent is `labserver agent`: read one sandbox.Request as a JSON line on
// stdin, run it, write its events as JSON lines on stdout. The host backend
// starts it as a child in its own process group; the Soft-RoCE guest runs
// the same code from the small labagent binary (cmd/internal/agentcmd), which
// starts without the web and Markdown stack this binary initializes.
func runAgent(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintln(stderr, "usage: labserver agent   (reads one request on stdin; no arguments)")
		return 2
	}
	return agentcmd.Once(ctx, "labserver agent", os.Stdin, stdout, stderr)
}

// DefaultShareRuns is --share-runs: a class pressing Run within seconds
// of each other shares one run (sandbox/runner_share.go); 5 s covers a
// class told "now press Run" without sharing a run that is half over.
const DefaultShareRuns = 5 * time.Second

// sandboxConfig is what `labserver serve` is told about the sandbox.
type sandboxConfig struct {
	Concurrency int // --concurrency [LAB_CONCURRENCY]: runs at once (0: as many as the backends take)
	QueueMax    int // --queue-max [LAB_QUEUE_MAX]: runs waiting beyond those (100)
	// --share-runs [LAB_SHARE_RUNS]: a request like a run queued or started
	// less than this ago joins it (5s; 0 = every request runs its own)
	ShareRuns     time.Duration
	Backend       string // --backend [LAB_BACKEND]: where RDMA experiments run, auto|host|vm|none
	SetupSoftRoCE bool   // --setup-softroce: may create rxe devices on this host
	Guests        int    // --guests [LAB_GUESTS]: Soft-RoCE guests in the pool (0 = from CPUs and memory)
	VMAccel       string // [LAB_VM_ACCEL]: the guest's accelerator, auto|kvm|tcg
	VMMemory      int    // [LAB_VM_MEMORY]: the guest's RAM in MiB (256)
	VMSnapshot    bool   // [LAB_VM_SNAPSHOT] not "off": guests start from a snapshot
	VMSharedRAM   bool   // [LAB_VM_SHARED_RAM] not "off": restored guests share the snapshot's RAM copy-on-write

	// More machines (runs/fleet): workers join the embedded NATS server.
	WorkersListen string // --workers-listen [LAB_WORKERS_LISTEN]: e.g. 0.0.0.0:4222 ("" = no workers)
	NatsToken     string // --nats-token [LAB_NATS_TOKEN]
	NatsNkeys     string // --nats-nkeys [LAB_NATS_NKEYS]: NAME=UPUBKEY per worker, comma-separated
	NatsTLSCert   string // --nats-tls-cert [LAB_NATS_TLS_CERT]
	NatsTLSKey    string // --nats-tls-key [LAB_NATS_TLS_KEY]
}

// sandboxFlags adds the sandbox flags to fset, defaulting from env.
func sandboxFlags(fset *flag.FlagSet, c *sandboxConfig, env func(key, def string) string) {
	atoi := func(key string, def int) int {
		if n, err := strconv.Atoi(env(key, "")); err == nil && n > 0 {
			return n
		}
		return def
	}
	fset.IntVar(&c.Concurrency, "concurrency", atoi("LAB_CONCURRENCY", 0), "experiment runs at once (0: as many as the backends take: a CPU each for host experiments, a guest each for RDMA ones) [LAB_CONCURRENCY]")
	fset.IntVar(&c.QueueMax, "queue-max", atoi("LAB_QUEUE_MAX", 100), "runs that may wait; beyond it learners are told the lab is busy [LAB_QUEUE_MAX]")
	share := DefaultShareRuns
	if d, err := time.ParseDuration(env("LAB_SHARE_RUNS", "")); err == nil && d >= 0 {
		share = d
	}
	fset.DurationVar(&c.ShareRuns, "share-runs", share, "a run request with the same experiment and parameters as a run queued or started less than this ago joins it as a watcher (its own record, the same live events); 0 = every request runs its own [LAB_SHARE_RUNS]")
	fset.StringVar(&c.Backend, "backend", env("LAB_BACKEND", "auto"), "where RDMA experiments run: auto|host|vm|none [LAB_BACKEND]")
	fset.IntVar(&c.Guests, "guests", atoi("LAB_GUESTS", 0), "Soft-RoCE guests running experiments side by side (0: one per two CPUs, as half the free memory allows) [LAB_GUESTS]")
	fset.StringVar(&c.WorkersListen, "workers-listen", env("LAB_WORKERS_LISTEN", ""), "let workers (labserver worker) join here, e.g. 0.0.0.0:4222 (embedded NATS with JetStream) [LAB_WORKERS_LISTEN]")
	fset.StringVar(&c.NatsToken, "nats-token", env("LAB_NATS_TOKEN", ""), "the token workers join with [LAB_NATS_TOKEN]")
	fset.StringVar(&c.NatsNkeys, "nats-nkeys", env("LAB_NATS_NKEYS", ""), "a public nkey per worker, NAME=U… comma-separated (the worker joins with --name NAME) [LAB_NATS_NKEYS]")
	fset.StringVar(&c.NatsTLSCert, "nats-tls-cert", env("LAB_NATS_TLS_CERT", ""), "TLS certificate for workers' connections [LAB_NATS_TLS_CERT]")
	fset.StringVar(&c.NatsTLSKey, "nats-tls-key", env("LAB_NATS_TLS_KEY", ""), "TLS key for workers' connections [LAB_NATS_TLS_KEY]")
	fset.BoolVar(&c.SetupSoftRoCE, "setup-softroce", false, "create Soft-RoCE devices on this host if its kernel has rdma_rxe")
	c.VMAccel = env("LAB_VM_ACCEL", "auto")
	c.VMMemory = vmMemory(env)
	c.VMSnapshot = env("LAB_VM_SNAPSHOT", "") != "off"
	c.VMSharedRAM = env("LAB_VM_SHARED_RAM", "") != "off"
}

// runSlots is how many runs the runner gives each backend at once. A
// backend that counts its own slots says so: a pool of guests (a guest
// each) or, on a lab with workers, a fleet.Mix (this machine's slots plus
// the live workers'; counting only this machine's would keep every run
// here and none would reach a worker). Otherwise host experiments take
// a CPU each, and anything else (this host's devices) one at a time.
func runSlots(host sandbox.Backend, hostSlots int) func(sandbox.Backend) int {
	return func(be sandbox.Backend) int {
		if s, ok := be.(sandbox.Slotted); ok {
			return s.Slots()
		}
		if be == host {
			return hostSlots
		}
		return 1
	}
}

// labSandbox is serve's sandbox: the experiments, the hub that stores and
// streams run events, the runner, and the backend of RDMA experiments.
type labSandbox struct {
	Registry  *sandbox.Registry
	Hub       *runhub.Hub
	Runner    *runner.Runner
	RDMA      sandbox.Backend
	Fleet     *fleet.Server // the workers; nil without --workers-listen
	closeRDMA func() error
}

// startSandbox marks the runs a previous server left unfinished as
// interrupted, picks the RDMA backend and starts the runner. Experiments
// that need only the host kernel always run in a `labserver agent` child.
func startSandbox(ctx context.Context, c sandboxConfig, db *store.DB, log *slog.Logger) (*labSandbox, error) {
	n, err := db.InterruptRuns(ctx, "the lab server stopped while this run was going")
	if err != nil {
		return nil, err
	}
	if n > 0 {
		log.Warn("runs left unfinished by the last server marked interrupted", "runs", n)
	}
	rdma, closeRDMA, _, err := rdmaBackend(ctx, c, log)
	if err != nil {
		return nil, fmt.Errorf("RDMA backend: %w", err)
	}
	var host sandbox.Backend = &agentproc.Agent{Nice: agentproc.HostNice}
	reg := experimentRegistry()
	var fl *fleet.Server
	if c.WorkersListen != "" {
		// More machines: workers join over NATS; each need's runs go to
		// this machine while it has a free slot, else to a worker.
		keys, err := workerKeys(c.NatsNkeys)
		if err != nil {
			closeRDMA()
			return nil, fmt.Errorf("--nats-nkeys: %w", err)
		}
		fl, err = fleet.Start(fleet.ServerConfig{Listen: c.WorkersListen, Token: c.NatsToken, Workers: keys,
			TLSCert: c.NatsTLSCert, TLSKey: c.NatsTLSKey, Logger: log})
		if err != nil {
			closeRDMA()
			return nil, err
		}
		rdmaSlots := 1
		if s, ok := rdma.(sandbox.Slotted); ok {
			rdmaSlots = s.Slots()
		}
		host = &fleet.Mix{Need: sandbox.NeedHost, Local: host, Slots0: runtime.NumCPU(), Fleet: fl}
		rdma = &fleet.Mix{Need: sandbox.NeedRDMA, Local: rdma, Slots0: rdmaSlots, Fleet: fl}
		inner := closeRDMA
		closeRDMA = func() error { fl.Close(); return inner() }
		if strings.HasPrefix(c.NatsNkeys, "@") {
			go reloadWorkerKeys(ctx, fl, c.NatsNkeys, log)
		}
	}
	hostSlots := runtime.NumCPU()
	slots := runSlots(host, hostSlots)
	concurrency := c.Concurrency
	if concurrency <= 0 {
		concurrency = hostSlots + slots(rdma)
		if fl != nil {
			concurrency = 1 << 16 // the workers' slots, which come and go, are the limit
		}
	}
	hub := runhub.New(db, log)
	// The wait a queued learner is told starts from earlier runs' lengths.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	expect, err := db.RunDurations(ctx, 5)
	cancel()
	if err != nil {
		log.Warn("run durations unread: queued learners get no wait estimate until runs finish", "err", err)
	}
	runner := runner.New(runner.Config{
		Registry: reg,
		Backend: func(n sandbox.Need) sandbox.Backend {
			if n == sandbox.NeedRDMA {
				return rdma
			}
			return host
		},
		Slots:       slots,
		Concurrency: concurrency,
		QueueMax:    c.QueueMax,
		Share:       c.ShareRuns,
		Sink:        hub,
		Logger:      log,
		Expect:      expect,
	})
	return &labSandbox{Registry: reg, Hub: hub, Runner: runner, RDMA: rdma, Fleet: fl, closeRDMA: closeRDMA}, nil
}

// Close ends every active run as interrupted (killing its processes, so
// its event streams end) and stops the RDMA backend.
func (l *labSandbox) Close() error {
	if l == nil {
		return nil
	}
	l.Runner.Close()
	return l.closeRDMA()
}

// workerKeys reads --nats-nkeys: NAME=KEY pairs, or @FILE with one pair
// per line (# starts a comment), which SIGHUP reads again.
func workerKeys(v string) ([]fleet.WorkerKey, error) {
	file, ok := strings.CutPrefix(v, "@")
	if !ok {
		return fleet.ParseWorkerKeys(v)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		l, _, _ = strings.Cut(l, "#")
		lines = append(lines, l)
	}
	return fleet.ParseWorkerKeys(strings.Join(lines, "\n"))
}

// reloadWorkerKeys reads the workers' key file again on every SIGHUP: a
// worker whose line is gone is disconnected and cannot join again
// (docs/operations.md, "Revoke a worker").
func reloadWorkerKeys(ctx context.Context, fl *fleet.Server, v string, log *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		keys, err := workerKeys(v)
		if err == nil {
			err = fl.SetWorkers(keys)
		}
		if err != nil {
			log.Error("workers' keys not reloaded (the old ones stay)", "file", v[1:], "err", err)
			continue
		}
		log.Info("workers' keys reloaded", "file", v[1:], "workers", len(keys))
	}
}
