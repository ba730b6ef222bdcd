package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/agentproc"
	"github.com/rdmalab/rdmalab/sandbox/netshape"
	"github.com/rdmalab/rdmalab/sandbox/vmguest"
)

// runAgentServe is `labserver agent --serve PORT`: the agent of the
// Soft-RoCE guest. It serves requests on the virtio-serial device PORT one
// run at a time (see sandbox/vmproto/proto.go); each run goes to a fresh
// `labserver agent` child, exactly as on the host, so an experiment that
// changes its own limits or capabilities cannot leak into the next run.
// Guest init starts it; it is not meant to be run by hand.
func runAgentServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: labserver agent --serve PORT   (inside the lab guest)")
		return 2
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(stderr, nil)))
	// /init starts us while it loads the modules; we set up Soft-RoCE and
	// link PORT (see sandbox/vmguest/guestinit.go).
	port, err := vmguest.PrepareGuest(ctx, args[0])
	if err != nil {
		fmt.Fprintf(stderr, "labserver agent: %v\n", err)
		return 1
	}
	defer port.Close()
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "labserver agent: %v\n", err)
		return 1
	}
	runner := &agentproc.Agent{Command: []string{exe, "agent"}, Spare: true}
	defer runner.Close()
	srv := &vmguest.GuestServer{
		Run:       resetAfter(runner.Exec),
		Lab:       vmguest.GuestLab,
		Hello:     vmguest.GuestHello(),
		WaitOnEOF: 20 * time.Millisecond, // the port reads EOF until the host connects
	}
	// The first run's agent starts now, while the host sees the hello.
	go runner.Prepare()
	if err := srv.Serve(ctx, port); err != nil && ctx.Err() == nil {
		fmt.Fprintf(stderr, "labserver agent: %v\n", err)
		return 1
	}
	return 0
}

// resetAfter wraps a guest run so that whatever the run did to the links
// (lesson 02's netem loss, its GSO limit) is undone when it ends — also
// when it failed, timed out or was cancelled and its agent was killed
// before its own deferred reset could run.
func resetAfter(run func(context.Context, sandbox.Request, func(sandbox.Event)) error) func(context.Context, sandbox.Request, func(sandbox.Event)) error {
	return func(ctx context.Context, req sandbox.Request, emit func(sandbox.Event)) error {
		defer func() {
			if err := netshape.Reset(netshape.GuestLinks...); err != nil {
				slog.Warn("reset the links after a run", "run", req.RunID, "err", err)
			}
		}()
		return run(ctx, req, emit)
	}
}
