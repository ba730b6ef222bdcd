// Package agentcmd is the agent's side of the lab as commands: run one
// experiment request (Once), the Soft-RoCE guest's agent server (Serve) and
// the guest's PID 1 (GuestInit). cmd/labagent is these and nothing else, so
// an agent process starts without initializing the web and Markdown stack
// (chroma alone cost about 0.8 s of package init per start under TCG);
// `labserver agent` runs Once too, for the host backend.
//
// It must not import web, store, lessons or anything that pulls in
// goldmark, chroma or templ: TestAgentDeps in cmd/labagent checks.
package agentcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/rdmalab/rdmalab/machines/agentproc"
	"github.com/rdmalab/rdmalab/machines/vmguest"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/hostexp"
	"github.com/rdmalab/rdmalab/sandbox/netshape"
	"github.com/rdmalab/rdmalab/sandbox/rdmaexp"
	"github.com/rdmalab/rdmalab/terminals/guestterm"
)

// Registry is every experiment an agent can run; the server (for the API
// and lesson checks) and the agents (to run them) must agree on it.
func Registry() *sandbox.Registry {
	reg := sandbox.NewRegistry()
	hostexp.Register(reg)
	rdmaexp.Register(reg)
	return reg
}

// Once reads one sandbox.Request as a JSON line on stdin, runs it and
// writes its events as JSON lines on stdout. The host backend and the
// guest's server start it as a child in its own process group. Logs go to
// stderr, which the parent turns into log events. name is the command for
// messages ("labagent", "labserver agent").
func Once(ctx context.Context, name string, stdin io.Reader, stdout, stderr io.Writer) int {
	slog.SetDefault(slog.New(slog.NewTextHandler(stderr, nil)))
	err := sandbox.ServeAgent(ctx, Registry(), stdin, stdout)
	var failure *sandbox.AgentFailure
	switch {
	case err == nil:
		return 0
	case errors.As(err, &failure):
		return 1 // already reported on stdout as an error event
	default:
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
}

// Serve is the agent of the Soft-RoCE guest (`labagent --serve PORT`). It
// serves requests on the virtio-serial device PORT one run at a time (see
// machines/vmproto/proto.go); each run goes to a fresh child of this binary
// (Once), exactly as on the host, so an experiment that changes its own
// limits or capabilities cannot leak into the next run. Guest init starts
// it; it is not meant to be run by hand.
func Serve(ctx context.Context, port string, stderr io.Writer) int {
	slog.SetDefault(slog.New(slog.NewTextHandler(stderr, nil)))
	// /init starts us while it loads the modules; we set up Soft-RoCE and
	// link PORT (see machines/vmguest/guestinit.go).
	p, err := vmguest.PrepareGuest(ctx, port)
	if err != nil {
		fmt.Fprintf(stderr, "labagent: %v\n", err)
		return 1
	}
	defer p.Close()
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "labagent: %v\n", err)
		return 1
	}
	runner := &agentproc.Agent{Command: []string{exe}, Spare: true}
	defer runner.Close()
	srv := &vmguest.GuestServer{
		Run:       resetAfter(runner.Exec),
		Lab:       vmguest.GuestLab,
		Hello:     vmguest.GuestHello(),
		WaitOnEOF: 20 * time.Millisecond, // the port reads EOF until the host connects
		Ops:       &guestterm.Service{},  // a learner's guest: shells, task checks, programs
	}
	// The first run's agent starts now, while the host sees the hello.
	go runner.Prepare()
	if err := srv.Serve(ctx, p); err != nil && ctx.Err() == nil {
		fmt.Fprintf(stderr, "labagent: %v\n", err)
		return 1
	}
	return 0
}

// resetAfter wraps a guest run so that whatever the run did to the links
// (lesson 02's netem loss, its GSO limit) is undone when it ends — also
// when it failed, timed out or was cancelled and its agent was killed
// before its own deferred reset could run.
func resetAfter(run func(context.Context, *sandbox.Session) error) func(context.Context, *sandbox.Session) error {
	return func(ctx context.Context, s *sandbox.Session) error {
		defer func() {
			if err := netshape.Reset(netshape.GuestLinks...); err != nil {
				slog.Warn("reset the links after a run", "err", err)
			}
		}()
		return run(ctx, s)
	}
}

// GuestInit is `labagent guest-init AGENT_PID`, PID 1 of the guest after
// /init has started the agent server and loaded the modules. It never
// returns: when supervision ends the guest powers off.
func GuestInit(args []string, stderr io.Writer) int {
	pid := 0
	if len(args) == 1 {
		pid, _ = strconv.Atoi(args[0])
	}
	if os.Getpid() != 1 || pid <= 0 {
		fmt.Fprintln(stderr, "usage: labagent guest-init AGENT_PID   (PID 1 inside the lab guest, started by its /init)")
		return 2
	}
	exe, err := os.Executable()
	if err != nil {
		exe = "/usr/bin/labagent"
	}
	if err := vmguest.GuestInit(pid, []string{exe, "--serve"}); err != nil {
		fmt.Fprintf(os.Stdout, "rdmalab-guest: FATAL: %v\n", err)
	}
	vmguest.PowerOff()
	return 0
}
