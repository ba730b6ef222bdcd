package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/rdmalab/rdmalab/machines/agentproc"
	"github.com/rdmalab/rdmalab/machines/vm"
	"github.com/rdmalab/rdmalab/machines/vmimage"
	"github.com/rdmalab/rdmalab/runs/choose"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/rxedev"
)

const vmUsage = `usage: labserver vm build [--if-needed] [--force]   build the guest image (only when inputs changed)
       labserver vm boot [--keep]                   boot a guest, print its state and boot time
       labserver vm status [--addr ADDR]            the running server's lab state (or what is installed)
       labserver vm shell                           boot a guest with a root shell on this terminal

common flags (environment fallbacks in brackets):
  --dir DIR        image cache [LAB_VM_DIR] (default $XDG_CACHE_HOME/rdmalab or ./.cache/vm)
  --accel A        auto|kvm|tcg [LAB_VM_ACCEL] (default auto: KVM when it really works)
  --memory MIB     guest RAM [LAB_VM_MEMORY] (default 256)
  --backend B      auto|host|vm|none [LAB_BACKEND], for build --if-needed
  --append ARGS    boot/shell: extra kernel parameters (loglevel=7 shows the boot)
`

// runVM is `labserver vm ...`, the admin's handle on the Soft-RoCE guest.
func runVM(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, vmUsage)
		return 2
	}
	sub, args := args[0], args[1:]
	fset := flag.NewFlagSet("labserver vm "+sub, flag.ContinueOnError)
	fset.SetOutput(stderr)
	fset.Usage = func() { fmt.Fprint(stderr, vmUsage) }
	cfg := vm.Config{}
	fset.StringVar(&cfg.Dir, "dir", vm.DefaultDir(), "image cache directory")
	env := osEnvOr
	fset.StringVar(&cfg.Accel, "accel", env("LAB_VM_ACCEL", "auto"), "auto|kvm|tcg")
	fset.IntVar(&cfg.MemoryMiB, "memory", vmMemory(env), "guest RAM in MiB")
	backend := fset.String("backend", env("LAB_BACKEND", choose.Auto), "auto|host|vm|none")
	ifNeeded := fset.Bool("if-needed", false, "build: only when RDMA experiments would run in the guest")
	force := fset.Bool("force", false, "build: rebuild even when up to date")
	keep := fset.Bool("keep", false, "boot: keep the guest running until interrupted")
	fset.StringVar(&cfg.Append, "append", "", "boot/shell: extra kernel parameters (e.g. loglevel=7 to see the boot)")
	addr := fset.String("addr", env("LAB_ADDR", "127.0.0.1:8080"), "status: the server to ask")
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fset.NArg() > 0 {
		fmt.Fprintf(stderr, "labserver vm %s: unexpected arguments %q\n", sub, fset.Args())
		return 2
	}
	var err error
	switch sub {
	case "build":
		err = vmBuild(ctx, cfg, *backend, *ifNeeded, *force, stdout)
	case "boot":
		err = vmBoot(ctx, cfg, *keep, stdout)
	case "status":
		err = vmStatus(ctx, cfg, *backend, *addr, stdout)
	case "shell":
		err = vmShell(ctx, cfg, stdout)
	default:
		fmt.Fprintf(stderr, "labserver vm: unknown subcommand %q\n\n%s", sub, vmUsage)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "labserver vm %s: %v\n", sub, err)
		return 1
	}
	return 0
}

// vmMemory is $LAB_VM_MEMORY (MiB), else 256.
func vmMemory(env func(key, def string) string) int {
	if n, err := strconv.Atoi(env("LAB_VM_MEMORY", "")); err == nil && n > 0 {
		return n
	}
	return 256
}

// osEnvOr is the process environment's value of key, or def when it is
// unset or empty: the `labserver vm` tools read it directly; serve reads
// it through Main.Getenv (Main.envOr).
func osEnvOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// vmBuild builds the image. With ifNeeded (make run) it first asks where
// RDMA experiments would run and builds only for the guest; a machine that
// cannot run the guest gets the reason and the fix, and make run goes on
// (the server then explains the same on every RDMA widget).
func vmBuild(ctx context.Context, cfg vm.Config, backend string, ifNeeded, force bool, stdout io.Writer) error {
	if ifNeeded {
		d, err := choose.Decide(ctx, choose.Options{Mode: backend})
		if err != nil {
			return err
		}
		if d.Backend != choose.VM {
			fmt.Fprintf(stdout, "vm image: not needed (%s)\n", d)
			return nil
		}
	}
	_, _, err := vmimage.Build(ctx, vmimage.BuildOptions{Dir: cfg.Dir, Force: force, Progress: stdout})
	return err
}

// vmBoot boots a guest the way the server does and reports it.
func vmBoot(ctx context.Context, cfg vm.Config, keep bool, stdout io.Writer) error {
	cfg.Progress = stdout
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	b := vm.New(cfg)
	b.Start()
	defer b.Close()
	start := time.Now()
	fmt.Fprintln(stdout, "booting the Soft-RoCE guest…")
	if _, err := b.WaitReady(ctx); err != nil {
		return err
	}
	boots := b.BootTimes()
	lab := b.Lab(ctx)
	fmt.Fprintln(stdout, lab.String())
	fmt.Fprint(stdout, sandbox.DeviceTable(lab.Devices))
	fmt.Fprintf(stdout, "QEMU start → agent ready: %.2f s (%.2f s with the image check); QEMU pid %d\n",
		boots[len(boots)-1].Seconds(), time.Since(start).Seconds(), b.GuestPID())
	if keep {
		fmt.Fprintln(stdout, "keeping the guest running; Ctrl-C stops it")
		<-ctx.Done()
	}
	return nil
}

// vmStatus asks the running server for its lab state; without one, it says
// what this machine has for the lab.
func vmStatus(ctx context.Context, cfg vm.Config, backend, addr string, stdout io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/api/lab", nil)
	if err != nil {
		return err
	}
	if resp, err := http.DefaultClient.Do(req); err == nil {
		defer resp.Body.Close()
		var lab sandbox.Lab
		if resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&lab) == nil {
			fmt.Fprintln(stdout, lab.String())
			fmt.Fprint(stdout, sandbox.DeviceTable(lab.Devices))
			return nil
		}
	}
	fmt.Fprintf(stdout, "no labserver answers at %s; this machine:\n", addr)
	d, err := choose.Decide(ctx, choose.Options{Mode: backend})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "  backend %s\n", d)
	if d.Backend == choose.VM {
		if im, err := vmimage.LoadImage(cfg.Dir); err == nil {
			fmt.Fprintf(stdout, "  guest image: kernel %s, %d MB initramfs, built %s in %s\n", im.Release, im.Size>>20, im.Built, cfg.Dir)
			if im.Disk != "" {
				fmt.Fprintf(stdout, "  on-demand disk: %s, %d MB (read-only, mounted when an experiment needs it)\n", im.Disk, im.DiskSize>>20)
			}
		} else {
			fmt.Fprintf(stdout, "  guest image: not built yet in %s (labserver vm build)\n", cfg.Dir)
		}
	}
	return nil
}

// vmShell boots a guest with a root shell on this terminal.
func vmShell(ctx context.Context, cfg vm.Config, stdout io.Writer) error {
	im, _, err := vmimage.Build(ctx, vmimage.BuildOptions{Dir: cfg.Dir, Progress: stdout})
	if err != nil {
		return err
	}
	accel := cfg.Accel
	if accel == "auto" {
		accel = vm.AccelTCG // a shell is no place to wait for a KVM probe; --accel kvm to try it
	}
	fmt.Fprintf(stdout, "booting kernel %s with %s; rxe0/rxe1 are set up, `poweroff -f` or exit leaves\n", im.Release, accel)
	g, err := vm.StartGuest(ctx, cfg, im, accel, true)
	if err != nil {
		return err
	}
	defer g.Stop()
	select {
	case <-g.Exited():
	case <-ctx.Done():
	}
	return nil
}

// rdmaBackend decides where RDMA experiments run and returns that backend
// (started) with its closer. serve calls it with --backend and
// --setup-softroce; the decision says why, for the log and /api/lab.
func rdmaBackend(ctx context.Context, c sandboxConfig, log *slog.Logger) (sandbox.Backend, func() error, choose.Decision, error) {
	d, err := choose.Decide(ctx, choose.Options{Mode: c.Backend, SetupSoftRoCE: c.SetupSoftRoCE})
	if err != nil {
		return nil, nil, d, err
	}
	log.Info("RDMA backend", "backend", d.Backend, "reason", d.Reason.Get("en"), "fix", d.Fix.Get("en"))
	switch d.Backend {
	case choose.Host:
		var note sandbox.Text
		if d.SetUp {
			note = sandbox.Text{"en": "Soft-RoCE set up by labserver on this host", "zh": "Soft-RoCE 由 labserver 在本机设置"}
		}
		return &rxedev.Backend{Host: &agentproc.Agent{}, Note: note}, func() error { return nil }, d, nil
	case choose.VM:
		cfg := vm.Config{Accel: c.VMAccel, MemoryMiB: c.VMMemory, Logger: log, NoSnapshot: !c.VMSnapshot, PrivateRAM: !c.VMSharedRAM}
		guests := c.Guests
		if guests <= 0 {
			guests = vm.DefaultGuests(cfg.MemoryMiB)
		}
		log.Info("Soft-RoCE guests", "guests", guests)
		p := vm.NewPool(cfg, guests)
		reg := experimentRegistry()
		p.Timing = func(id string) bool { e := reg.Get(id); return e != nil && e.Class() == sandbox.Timing }
		p.Start()
		return p, p.Close, d, nil
	default:
		return sandbox.NoBackend{Reason: d.Why()}, func() error { return nil }, d, nil
	}
}
