package main

import (
	"context"
	"flag"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmalab/rdmalab/internal/metrics"
	"github.com/rdmalab/rdmalab/machines/vm"
	"github.com/rdmalab/rdmalab/runs/fleet"
	"github.com/rdmalab/rdmalab/runs/runner"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/terminals/terminal"
)

// metricsConfig is who may read /metrics (internal/metrics.Access).
type metricsConfig struct {
	Token string // LAB_METRICS_TOKEN: the bearer token; "": a direct loopback client only
}

func metricsFlags(fset *flag.FlagSet, c *metricsConfig, env func(key, def string) string) {
	fset.StringVar(&c.Token, "metrics-token", env("LAB_METRICS_TOKEN", ""),
		"bearer token that lets a scraper read /metrics from anywhere; without it only a client on this machine not coming through the reverse proxy may (docs/operations.md, \"Metrics\") [LAB_METRICS_TOKEN]")
}

// termCounts is what the web's terminals say of their load (placement.Placement).
type termCounts interface {
	InUse() (n, max int)
	Waiting() int
}

// labMetrics is what the metrics read from the running lab at a scrape.
type labMetrics struct {
	db     *store.DB
	dbPath string // the database file (its folder's free disk)
	sb     *labSandbox
	terms  termCounts          // nil: terminals off
	local  *terminal.Terminals // this machine's terminals (spares); nil: none
	keep   *terminal.Keep      // the kept machines' store; nil: off
}

// startMetrics makes the lab's registry and hands its hooks to the runner
// and the store; the web's hooks and handler go into web.Config.
func startMetrics(src labMetrics) *metrics.Lab {
	l := metrics.New()
	v := readVersion()
	l.Gauge("lab_build_info", "Always 1: the labserver build, by module version and VCS revision (labserver version).",
		[]string{"version", "revision", "goversion"}, func() []metrics.Sample {
			return []metrics.Sample{{Labels: []string{v.Module, v.Revision, v.Go}, Value: 1}}
		})
	src.db.ObserveWrites(l)
	if src.sb != nil {
		src.sb.Runner.Observe(l)
		addRunGauges(l, src.sb)
	}
	addTerminalGauges(l, src)
	l.Gauge("lab_lti_outbox_pending", "LTI scores waiting for delivery to the LMS.", nil, func() []metrics.Sample {
		p, _, err := outboxDepth(src.db)
		if err != nil {
			return nil
		}
		return metrics.One(float64(p))
	})
	l.Gauge("lab_lti_outbox_failing", "LTI scores waiting whose delivery failed at least once (the LMS refused or did not answer).", nil, func() []metrics.Sample {
		_, f, err := outboxDepth(src.db)
		if err != nil {
			return nil
		}
		return metrics.One(float64(f))
	})
	return l
}

// outboxDepth asks the database, bounded: a scrape never hangs on it.
func outboxDepth(db *store.DB) (pending, failing int, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return db.LTIOutboxDepth(ctx)
}

// addRunGauges: the queue per experiment, the RDMA lab's guests and
// readiness, and the workers. Every family is registered whatever the
// configuration (a lab without workers has 0 of them), so a dashboard and
// its alerts find each name on every lab.
func addRunGauges(l *metrics.Lab, sb *labSandbox) {
	l.Gauge("lab_runs", "Experiment runs now, by experiment and state (queued, running); every experiment of the lab, 0 when idle.",
		[]string{"experiment", "state"}, func() []metrics.Sample {
			load := map[string]runner.ExperimentLoad{}
			for _, e := range sb.Runner.Load() {
				load[e.Experiment] = e
			}
			var out []metrics.Sample
			for _, exp := range sb.Registry.List() {
				e := load[exp.ID]
				out = append(out, metrics.Sample{Labels: []string{exp.ID, "queued"}, Value: float64(e.Queued)},
					metrics.Sample{Labels: []string{exp.ID, "running"}, Value: float64(e.Running)})
			}
			return out
		})
	l.Gauge("lab_runs_queued", "Experiment runs waiting now, all experiments together.", nil, func() []metrics.Sample {
		n := 0
		for _, e := range sb.Runner.Load() {
			n += e.Queued
		}
		return metrics.One(float64(n))
	})
	pool := experimentPool(sb.RDMA)
	l.Gauge("lab_ready", "1 when the RDMA lab can run experiments now (a guest of the pool ready, or this host's devices), else 0; backend says which (none: no RDMA backend, by configuration or because none works here).",
		[]string{"backend"}, func() []metrics.Sample {
			ready, backend := 0.0, "none"
			switch {
			case pool != nil:
				backend = "vm"
				for _, m := range pool.Members() {
					if m.State() == sandbox.LabReady {
						ready = 1
					}
				}
			case sb.RDMA != nil:
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				lab := sb.RDMA.Lab(ctx)
				cancel()
				backend = lab.Backend
				if lab.State == sandbox.LabReady {
					ready = 1
				}
			}
			return []metrics.Sample{{Labels: []string{backend}, Value: ready}}
		})
	l.Counter("lab_guest_restarts_total", "Experiment guests lost (crashed, hung) and booted again since the start (0 without a guest pool).", nil, func() []metrics.Sample {
		var n int64
		if pool != nil {
			for _, m := range pool.Members() {
				n += m.Restarts()
			}
		}
		return metrics.One(float64(n))
	})
	l.Gauge("lab_experiment_guests", "Experiment guests of the pool by state (booting, ready, failed).", []string{"state"}, func() []metrics.Sample {
		n := map[sandbox.LabState]int{sandbox.LabBooting: 0, sandbox.LabReady: 0, sandbox.LabFailed: 0}
		if pool != nil {
			for _, m := range pool.Members() {
				n[m.State()]++
			}
		}
		var out []metrics.Sample
		for st, c := range n {
			out = append(out, metrics.Sample{Labels: []string{string(st)}, Value: float64(c)})
		}
		return out
	})
	l.Gauge("lab_experiment_guests_memory_bytes", "Resident memory of the experiment guests' QEMU processes together.", nil, func() []metrics.Sample {
		var n int64
		if pool != nil {
			for _, b := range pool.IdleRSS() {
				n += b
			}
		}
		return metrics.One(float64(n))
	})
	fl := sb.Fleet
	l.Gauge("lab_workers", "Workers heard from within their heartbeat deadline (0 without --workers-listen).", nil, func() []metrics.Sample {
		if fl == nil {
			return metrics.One(0)
		}
		return metrics.One(float64(len(fl.Workers())))
	})
	l.Gauge("lab_worker_heartbeat_age_seconds", "Time since each live worker's last heartbeat (a worker silent past its deadline is dropped from lab_workers).", []string{"worker"}, func() []metrics.Sample {
		if fl == nil {
			return nil
		}
		var out []metrics.Sample
		for _, w := range fl.Workers() {
			out = append(out, metrics.Sample{Labels: []string{w.Name}, Value: time.Since(w.Seen).Seconds()})
		}
		return out
	})
}

// experimentPool is the Soft-RoCE guests' pool behind the RDMA backend
// (alone or mixed with workers), nil when experiments run elsewhere.
func experimentPool(be sandbox.Backend) *vm.Pool {
	if m, ok := be.(*fleet.Mix); ok {
		be = m.Local
	}
	p, _ := be.(*vm.Pool)
	return p
}

// addTerminalGauges: learner terminals and their guests, the kept
// machines' disk and the free disk beside the database; registered
// whatever the configuration, as addRunGauges's.
func addTerminalGauges(l *metrics.Lab, src labMetrics) {
	l.Gauge("lab_terminals", "Learner terminals: in_use (a guest each, here and on workers), waiting (learners queued for one) and max (the cap; 0: terminals off).",
		[]string{"state"}, func() []metrics.Sample {
			n, max, waiting := 0, 0, 0
			if src.terms != nil {
				n, max = src.terms.InUse()
				waiting = src.terms.Waiting()
			}
			return []metrics.Sample{{Labels: []string{"in_use"}, Value: float64(n)},
				{Labels: []string{"waiting"}, Value: float64(waiting)}, {Labels: []string{"max"}, Value: float64(max)}}
		})
	l.Gauge("lab_terminal_guests", "This machine's learner guests by state: in_use, idle_paused (in use, paused after --idle-pause without a keystroke; counted in in_use too), spare_ready (paused, waiting for a learner), spare_starting, kept_on_disk (saved for their learner).",
		[]string{"state"}, func() []metrics.Sample {
			var n, kept int
			var st terminal.SpareStats
			var idle terminal.IdleStats
			if t := src.local; t != nil {
				n, _ = t.InUse()
				st = t.SpareStats()
				idle = t.IdleStats()
			}
			if k := src.keep; k != nil {
				_, kept = k.Usage()
			}
			return []metrics.Sample{{Labels: []string{"in_use"}, Value: float64(n)}, {Labels: []string{"idle_paused"}, Value: float64(idle.Paused)},
				{Labels: []string{"spare_ready"}, Value: float64(st.Ready)}, {Labels: []string{"spare_starting"}, Value: float64(st.Starting)},
				{Labels: []string{"kept_on_disk"}, Value: float64(kept)}}
		})
	l.Gauge("lab_kept_machines_bytes", "Disk the kept learner machines take (compressed states; 0 when machines are not kept).", nil, func() []metrics.Sample {
		var b int64
		if src.keep != nil {
			b, _ = src.keep.Usage()
		}
		return metrics.One(float64(b))
	})
	l.Gauge("lab_kept_machines_budget_bytes", "The kept machines' disk budget (--keep-total-max); 0: no budget, or machines not kept.", nil, func() []metrics.Sample {
		if src.keep == nil {
			return metrics.One(0)
		}
		return metrics.One(float64(src.keep.TotalMax))
	})
	l.Gauge("lab_disk_free_bytes", "Free disk for the unprivileged on the file system of: db (the database's folder), kept (the kept machines' folder, when machines are kept).",
		[]string{"path"}, func() []metrics.Sample {
			var out []metrics.Sample
			if b, ok := freeBytes(filepath.Dir(src.dbPath)); ok {
				out = append(out, metrics.Sample{Labels: []string{"db"}, Value: b})
			}
			if src.keep != nil {
				if b, ok := freeBytes(src.keep.Dir); ok {
					out = append(out, metrics.Sample{Labels: []string{"kept"}, Value: b})
				}
			}
			return out
		})
}

// freeBytes is the free disk an unprivileged process may use at dir.
func freeBytes(dir string) (float64, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return float64(st.Bavail) * float64(st.Bsize), true
}
