package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/rdmalab/rdmalab/store"
)

const userUsage = `usage: labserver user add NAME      [--db PATH]  create an instructor account
       labserver user add NAME --ta [--class CODE] [--db PATH]  create a TA account (sees only its classes)
       labserver user passwd NAME   [--db PATH]  set a new password (ends the account's sessions)
       labserver user remove NAME   [--db PATH]  remove an account (not the last one)
       labserver user list          [--db PATH]  list the accounts (name, role instructor or ta, created)
  The password is never an argument: it is asked for on the terminal (twice,
  not echoed) or read as the first line of standard input
  (echo "$PW" | labserver user add ada: echo is a shell builtin).
  --ta        add: a teaching assistant (views its classes and gradebooks;
              no accounts, no class or course settings)
  --class CODE  add --ta: assign the TA to the class with this join code
  --db PATH   the lab database [LAB_DB] (default ./rdmalab.db); safe while serving
`

// stdin is where passwords are read from (tests replace it).
var stdin io.Reader = os.Stdin

// runUser is `labserver user add|passwd|remove|list`.
func runUser(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	verb, args, fset, code, ok := verbFlags("user", userUsage, args, stderr)
	if !ok {
		return code
	}
	dbPath := fset.String("db", defaultDB(), "database file")
	ta := fset.Bool("ta", false, "add a TA account")
	class := fset.String("class", "", "the TA's class (join code)")
	// Flags may come before or after NAME.
	names, code, ok := parseInterleaved(fset, args)
	if !ok {
		return code
	}
	wantNames := 1
	switch verb {
	case "add", "passwd", "remove":
	case "list":
		wantNames = 0
	default:
		fmt.Fprintf(stderr, "labserver user: unknown action %q\n\n%s", verb, userUsage)
		return 2
	}
	if len(names) != wantNames {
		fmt.Fprint(stderr, userUsage)
		return 2
	}
	if (*ta || *class != "") && verb != "add" || *class != "" && !*ta {
		fmt.Fprintln(stderr, "labserver user: --ta and --class go with add (--class only with --ta)")
		return 2
	}
	if _, err := os.Stat(*dbPath); err != nil && verb != "add" {
		fmt.Fprintf(stderr, "labserver user: %v (set --db or LAB_DB to the lab's database)\n", err)
		return 1
	}
	db, err := store.Open(*dbPath)
	if err != nil {
		fmt.Fprintln(stderr, "labserver user:", err)
		return 1
	}
	defer db.Close()

	var name string
	if wantNames == 1 {
		name = strings.TrimSpace(names[0])
		check := store.CheckUsername // an existing account keeps its name
		if verb == "add" {
			check = store.CheckNewUsername
		}
		if err := check(name); err != nil {
			fmt.Fprintln(stderr, "labserver user:", err)
			return 2
		}
	}
	fail := func(err error) int {
		var ve *store.ValidationError
		switch {
		case errors.As(err, &ve):
			fmt.Fprintln(stderr, "labserver user:", ve.Message)
		case errors.Is(err, store.ErrInstructorTaken):
			fmt.Fprintf(stderr, "labserver user: %q exists already (use `labserver user passwd %s` to set its password)\n", name, name)
		case errors.Is(err, store.ErrUsernameLookalike):
			fmt.Fprintf(stderr, "labserver user: %q looks like an existing account's name (see `labserver user list`); choose another\n", name)
		case errors.Is(err, store.ErrNoInstructor):
			fmt.Fprintf(stderr, "labserver user: no instructor %q (see `labserver user list`)\n", name)
		case errors.Is(err, store.ErrLastInstructor):
			fmt.Fprintf(stderr, "labserver user: %q is the last instructor account; add another one first\n", name)
		default:
			fmt.Fprintln(stderr, "labserver user:", err)
		}
		return 1
	}
	switch verb {
	case "list":
		list, err := db.Instructors(ctx)
		if err != nil {
			return fail(err)
		}
		for _, in := range list {
			fmt.Fprintf(stdout, "%s\t%s\t%s\n", in.Username, in.Role, in.CreatedAt.Format("2006-01-02 15:04 MST"))
		}
		return 0
	case "remove":
		if err := db.DeleteInstructor(ctx, name); err != nil {
			return fail(err)
		}
		fmt.Fprintf(stdout, "instructor %q removed (its sessions ended)\n", name)
		return 0
	}
	pw, err := readPassword(stdin, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "labserver user:", err)
		return 1
	}
	if verb == "add" && *ta {
		return addTA(ctx, db, name, pw, *class, stdout, stderr, fail)
	}
	if verb == "add" {
		if _, err := db.CreateInstructor(ctx, name, pw); err != nil {
			return fail(err)
		}
		fmt.Fprintf(stdout, "instructor %q created\n", name)
		return 0
	}
	if err := db.ChangePassword(ctx, name, pw, ""); err != nil {
		return fail(err)
	}
	fmt.Fprintf(stdout, "password of %q changed (its sessions ended)\n", name)
	return 0
}

// addTA creates a TA account and assigns it to the class with join code
// class ("" : none yet; the classes page assigns it later). The class is
// looked up first, so a wrong code creates no account.
func addTA(ctx context.Context, db *store.DB, name, pw, class string, stdout, stderr io.Writer, fail func(error) int) int {
	var c store.Cohort
	if class != "" {
		var err error
		if c, err = db.CohortByCode(ctx, class); errors.Is(err, store.ErrNoCohort) {
			fmt.Fprintf(stderr, "labserver user: no class has the join code %q (see /instructor/classes)\n", class)
			return 1
		} else if err != nil {
			return fail(err)
		}
	}
	in, err := db.CreateAccount(ctx, name, pw, store.RoleTA)
	if err != nil {
		return fail(err)
	}
	if c.ID == 0 {
		fmt.Fprintf(stdout, "TA %q created (no class yet: assign one on /instructor/classes)\n", name)
		return 0
	}
	if err := db.SetCohortTA(ctx, c.ID, in.ID, true); err != nil {
		return fail(err)
	}
	fmt.Fprintf(stdout, "TA %q created, assigned to class %q\n", name, c.Name)
	return 0
}

// readPassword asks twice on a terminal with echo off; otherwise it reads
// the first line of in.
func readPassword(in io.Reader, prompt io.Writer) (string, error) {
	if f, ok := in.(*os.File); ok {
		if t, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err == nil {
			read := func(label string) (string, error) {
				fmt.Fprint(prompt, label)
				quiet := *t
				quiet.Lflag &^= unix.ECHO
				quiet.Lflag |= unix.ICANON
				if err := unix.IoctlSetTermios(int(f.Fd()), unix.TCSETS, &quiet); err != nil {
					return "", fmt.Errorf("turn off echo: %w", err)
				}
				defer func() {
					unix.IoctlSetTermios(int(f.Fd()), unix.TCSETS, t)
					fmt.Fprintln(prompt)
				}()
				return readLine(f)
			}
			pw, err := read("password (at least 10 characters): ")
			if err != nil {
				return "", err
			}
			again, err := read("again: ")
			if err != nil {
				return "", err
			}
			if pw != again {
				return "", errors.New("the two passwords differ")
			}
			return pw, nil
		}
	}
	return readLine(in)
}

// readLine reads one line (without its newline) byte by byte, so nothing
// after it is consumed.
func readLine(in io.Reader) (string, error) {
	var b strings.Builder
	one := make([]byte, 1)
	for b.Len() <= store.MaxPasswordLen*4 {
		n, err := in.Read(one)
		if n == 1 {
			if one[0] == '\n' {
				break
			}
			b.WriteByte(one[0])
			continue
		}
		if err == io.EOF {
			if b.Len() == 0 {
				return "", errors.New("no password on standard input")
			}
			break
		}
		if err != nil {
			return "", fmt.Errorf("read password: %w", err)
		}
	}
	return strings.TrimSuffix(b.String(), "\r"), nil
}

// verbFlags starts `labserver NAME VERB [flags]`: usage on stderr for no
// arguments (exit 2) or -h/--help/help (exit 0); else the verb, the rest
// of the arguments, and a flag set for the verb that prints usage on a
// flag error.
func verbFlags(name, usage string, args []string, stderr io.Writer) (verb string, rest []string, fset *flag.FlagSet, code int, ok bool) {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return "", nil, nil, 2, false
		}
		return "", nil, nil, 0, false
	}
	fset = flag.NewFlagSet("labserver "+name+" "+args[0], flag.ContinueOnError)
	fset.SetOutput(stderr)
	fset.Usage = func() { fmt.Fprint(stderr, usage) }
	return args[0], args[1:], fset, 0, true
}

// parseInterleaved parses args with fset, letting flags come before, between
// or after the positional arguments, which it returns. When parsing stops
// (-h, or a bad flag) ok is false and code is the exit status: 0 for help,
// 2 for bad usage.
func parseInterleaved(fset *flag.FlagSet, args []string) (positional []string, code int, ok bool) {
	for {
		if err := fset.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, 0, false
			}
			return nil, 2, false
		}
		if fset.NArg() == 0 {
			return positional, 0, true
		}
		positional = append(positional, fset.Arg(0))
		args = fset.Args()[1:]
	}
}
