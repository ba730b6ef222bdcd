package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/hostexp"
	"github.com/rdmalab/rdmalab/sandbox/rdmaexp"
)

func init() {
	commands["agent"] = runAgent
}

// experimentRegistry is every experiment this binary can run; serve (for
// the API and lesson checks) and agent (to run them) must agree on it.
func experimentRegistry() *sandbox.Registry {
	reg := sandbox.NewRegistry()
	hostexp.Register(reg)
	rdmaexp.Register(reg)
	return reg
}

// runAgent is `labserver agent`: read one sandbox.Request as a JSON line on
// stdin, run it, write its events as JSON lines on stdout. The host backend
// starts it as a child in its own process group; the Soft-RoCE guest runs
// the same code. Logs go to stderr, which the backend turns into log events.
func runAgent(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "--serve" {
		return runAgentServe(ctx, args[1:], stdout, stderr) // the guest's agent, agent_serve.go
	}
	if len(args) > 0 {
		fmt.Fprintln(stderr, "usage: labserver agent   (reads one request on stdin; no arguments)")
		return 2
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(stderr, nil)))
	err := sandbox.ServeAgent(ctx, experimentRegistry(), os.Stdin, stdout)
	var failure *sandbox.AgentFailure
	switch {
	case err == nil:
		return 0
	case errors.As(err, &failure):
		return 1 // already reported on stdout as an error event
	default:
		fmt.Fprintf(stderr, "labserver agent: %v\n", err)
		return 1
	}
}
