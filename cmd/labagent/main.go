// Command labagent is the lab's experiment agent and nothing else: the
// binary the Soft-RoCE guest runs (its /init, its agent server and one
// fresh agent child per run). It leaves out the web, the store and the
// Markdown stack so that each agent process starts fast under TCG; see
// cmd/internal/agentcmd. `make build` builds it beside labserver, which puts it
// in the guest image.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/rdmalab/rdmalab/cmd/internal/agentcmd"
)

const usage = `usage: labagent                      run one experiment request: a JSON line on stdin, events on stdout
       labagent --serve PORT         the Soft-RoCE guest's agent server (started by the guest's /init)
       labagent guest-init AGENT_PID PID 1 of the guest (started by its /init)
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		return agentcmd.Once(ctx, "labagent", stdin, stdout, stderr)
	case args[0] == "--serve" && len(args) == 2:
		return agentcmd.Serve(ctx, args[1], stderr)
	case args[0] == "guest-init":
		return agentcmd.GuestInit(args[1:], stderr)
	case args[0] == "-h" || args[0] == "--help" || args[0] == "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprint(stderr, usage)
		return 2
	}
}
