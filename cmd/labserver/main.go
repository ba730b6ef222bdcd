// Command labserver is rdmalab: it serves the lessons, quizzes and
// experiments (serve, the default), validates a course folder (check), and
// hosts the experiment agent and the Soft-RoCE guest tools (agent, vm).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
	// Graded lessons show dates in a class's time zone: the zone database
	// built in, for machines (minimal containers) without tzdata.
	_ "time/tzdata"
)

// usage is printed for -h and unknown subcommands.
const usage = `usage: labserver [serve] [flags]    serve the lab (default)
       labserver check [DIR]         validate a course folder (default: the built-in course)
       labserver agent               run one experiment request (used by the sandbox)
       labserver vm ...              build and manage the Soft-RoCE guest
       labserver worker --join nats://HOST:4222 --token T   run experiments for a lab on this machine
       labserver backup [--db PATH] FILE   online copy of the database and the LTI key (safe while serving)
       labserver restore [--db PATH] FILE  put a backup and its LTI key back (server stopped)
       labserver new lesson SLUG [--dir DIR]  scaffold a lesson (both languages, every directive)
       labserver user add|passwd|remove NAME, user list   instructor accounts (password asked, never an argument; add --ta: a TA)
       labserver roster import|codes --class CODE   a class's roster from CSV, its personal codes as CSV
       labserver import aiken|gift FILE [--prefix P] [--lang L]   Moodle questions → quiz.yaml on stdout
       labserver lti add|list|remove|urls ...   register LMS platforms (LTI 1.3)
       labserver version             the module version and VCS revision this binary was built from
       labserver doctor [serve flags]   check this host for what serving needs; each problem with its fix

environment of serve without a flag:
  LAB_ADMIN_PASSWORD  sets the instructor account "admin" (else the first start
                      prints a one-time setup link for /instructor)
  LAB_VM_ACCEL        the guest's accelerator: auto (KVM when it works), kvm, tcg
  LAB_VM_MEMORY       the guest's RAM in MiB (256)
  LAB_VM_SNAPSHOT     "off": boot every guest instead of restoring a snapshot
`

// Command is a subcommand. It returns the process exit code.
type Command func(ctx context.Context, args []string, stdout, stderr io.Writer) int

// commands maps subcommand names to their implementation (each in its
// own file); usage lists every one of them (TestDispatch).
var commands = map[string]Command{
	"serve":   runServe,
	"check":   runCheck,
	"agent":   runAgent,
	"vm":      runVM,
	"backup":  runBackup,
	"restore": runRestore,
	"new":     runNew,
	"worker":  runWorker,
	"user":    runUser,
	"import":  runImport,
	"roster":  runRoster,
	"lti":     runLTI,
	"version": runVersion,
	"doctor":  runDoctor,
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// dispatch picks the subcommand (serve when the first argument is a flag or
// absent) and runs it.
func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	name := "serve"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		name, args = args[0], args[1:]
	}
	switch name {
	case "help":
		fmt.Fprint(stdout, usage)
		fmt.Fprintln(stdout, "\nserve flags (each defaults to the LAB_* variable in brackets):")
		serveFlagSet(&Main{Getenv: func(string) string { return "" }}, stdout).PrintDefaults()
		return 0
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "labserver: unknown command %q (known: %s)\n\n%s", name, known(), usage)
		return 2
	}
	return cmd(ctx, args, stdout, stderr)
}

func known() string {
	var names []string
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return fmt.Sprint(names)
}

// exitCode maps an error to the process status: 0 for none, 2 for bad
// usage, 1 otherwise.
func exitCode(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage):
		return 2
	default:
		return 1
	}
}

// errUsage marks errors in the command line itself.
var errUsage = errors.New("usage")
