package guestterm

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The verbs calls a learner's program made, as the kernel saw them: while
// the program runs, kprobes on the uverbs entry points record each call
// the program's process (comm progName) made into the kernel, with the
// kernel's return value where it matters. The check reads the record
// (LAB_TRACE), so an exercise is judged by what reached the device, not by
// what the program printed: a program that prints a GID it read from sysfs
// has no query_gid line, one that prints "errno=12" has no reg_mr line
// with ret=-12. The kprobes live in a tracefs instance of their own and
// are removed after every run.
//
// Each line of the record is "EVENT COMM PID [ARG=VALUE…]"; a line that
// starts with "#" says what could not be traced and why.

// progName is the learner program's command name (the binary compile
// writes): the trace keeps its calls and drops everyone else's (the peer,
// the agent, a kernel worker).
const progName = "prog"

const (
	traceGroup    = "rdmalab"
	traceInstance = "rdmalab-program"
)

// traceProbes are the kernel entry points recorded, by event name. rdma-core
// 44 makes each call through the ioctl method where the kernel has one and
// through the older write() command otherwise, so an event may have two
// probes; all are Linux 6.1's ib_uverbs (drivers/infiniband/core) unless
// mod names another module.
//
// An event with both an entry probe ("p") and return probes ("r") is one
// line of the record: the entry's arguments, then the return value
// (parseTrace joins them). modify_qp is such an event: its entry probe is
// where uverbs hands the checked request to the device (ib_core's
// ib_modify_qp_with_udata: the target state, the first field of struct
// ib_qp_attr, and the attribute mask), its return probes are the
// system call's answer; a request uverbs refused before the device has a
// ret and no state. create_qp is another (srq=, then ret=).
var traceProbes = []struct{ event, kind, mod, sym, args string }{
	{"open_device", "p", "", "ib_uverbs_open", ""},                                                 // ibv_open_device: open of /dev/infiniband/uverbsN
	{"query_port", "p", "", "ib_uverbs_handler_UVERBS_METHOD_QUERY_PORT", ""},                      // ibv_query_port
	{"query_port", "p", "", "ib_uverbs_query_port", ""},                                            // … its write() command
	{"query_gid", "p", "", "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY", ""},                  // ibv_query_gid, ibv_query_gid_ex
	{"query_gid", "p", "", "ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_TABLE", ""},                  // ibv_query_gid_table
	{"reg_mr", "r", "", "ib_uverbs_reg_mr", "ret=$retval:s32"},                                     // ibv_reg_mr: 0 or -errno
	{"dereg_mr", "r", "", "ib_uverbs_dereg_mr", "ret=$retval:s32"},                                 // ibv_dereg_mr
	{"post_send", "r", "", "ib_uverbs_post_send", "ret=$retval:s32"},                               // rxe's doorbell write()
	{"create_qp", "r", "", "ib_uverbs_create_qp", "ret=$retval:s32"},                               // ibv_create_qp (write() command)
	{"create_qp", "r", "", "ib_uverbs_handler_UVERBS_METHOD_QP_CREATE", "ret=$retval:s32"},         // … its ioctl method
	{"modify_qp", "p", "ib_core", "ib_modify_qp_with_udata", "state=+0($arg2):u32 mask=$arg3:x32"}, // ibv_modify_qp, as the device gets it
	{"modify_qp", "r", "", "ib_uverbs_modify_qp", "ret=$retval:s32"},                               // … the answer (write() command)
	{"modify_qp", "r", "", "ib_uverbs_ex_modify_qp", "ret=$retval:s32"},                            // … the extended command's
	{"create_ah", "r", "", "ib_uverbs_create_ah", "ret=$retval:s32"},                               // ibv_create_ah (a UD destination)
	{"create_srq", "r", "", "ib_uverbs_create_srq", "ret=$retval:s32"},                             // ibv_create_srq (write() command)
	{"create_srq", "r", "", "ib_uverbs_handler_UVERBS_METHOD_SRQ_CREATE", "ret=$retval:s32"},       // … its ioctl method
	// create_qp's entry, where uverbs hands the checked request to the
	// device (ib_core's ib_create_qp_user): which SRQ the QP takes its
	// receives from, the fifth pointer of Linux 6.1's struct
	// ib_qp_init_attr (0x0: a receive queue of its own).
	{"create_qp", "p", "ib_core", "ib_create_qp_user", "srq=+32($arg3):x64"},
}

// verbsTrace is the tracing of one program run.
type verbsTrace struct {
	root   string   // tracefs
	probes []string // "GROUP/NAME" of the kprobes made
	notes  []string // what could not be traced, and why
}

// startVerbsTrace makes the kprobes and starts recording; what fails is
// noted in the record rather than ending the run.
func startVerbsTrace() *verbsTrace {
	t := &verbsTrace{}
	root, err := tracefsRoot()
	if err != nil {
		t.notes = append(t.notes, "no tracefs: "+err.Error())
		return t
	}
	t.root = root
	t.cleanup() // what a run that died left behind
	inst := filepath.Join(root, "instances", traceInstance)
	if err := os.Mkdir(inst, 0o700); err != nil {
		t.notes = append(t.notes, "no trace instance: "+err.Error())
		t.root = ""
		return t
	}
	for i, p := range traceProbes {
		name := fmt.Sprintf("%s_%d", p.event, i)
		mod := p.mod
		if mod == "" {
			mod = "ib_uverbs"
		}
		def := strings.TrimSpace(fmt.Sprintf("%s:%s/%s %s:%s %s", p.kind, traceGroup, name, mod, p.sym, p.args))
		if err := appendFile(filepath.Join(root, "kprobe_events"), def); err != nil {
			t.notes = append(t.notes, fmt.Sprintf("no probe on %s: %v", p.sym, err))
			continue
		}
		t.probes = append(t.probes, traceGroup+"/"+name)
		if err := os.WriteFile(filepath.Join(inst, "events", traceGroup, name, "enable"), []byte("1"), 0); err != nil {
			t.notes = append(t.notes, fmt.Sprintf("probe on %s not enabled: %v", p.sym, err))
		}
	}
	// A program that posts in a loop fills the buffer: keep the first
	// calls (the ones the checks look for), drop the rest.
	_ = os.WriteFile(filepath.Join(inst, "options", "overwrite"), []byte("0"), 0)
	_ = os.WriteFile(filepath.Join(inst, "tracing_on"), []byte("1"), 0)
	return t
}

// stop ends the recording, removes the kprobes and returns the record.
func (t *verbsTrace) stop() []byte {
	var b strings.Builder
	for _, n := range t.notes {
		fmt.Fprintf(&b, "# %s\n", n)
	}
	if t.root == "" {
		return []byte(b.String())
	}
	inst := filepath.Join(t.root, "instances", traceInstance)
	_ = os.WriteFile(filepath.Join(inst, "tracing_on"), []byte("0"), 0)
	raw, err := os.ReadFile(filepath.Join(inst, "trace"))
	if err != nil {
		fmt.Fprintf(&b, "# the record could not be read: %v\n", err)
	}
	b.WriteString(parseTrace(raw, progName))
	t.cleanup()
	return []byte(b.String())
}

// cleanup disables and removes this package's instance and kprobes.
func (t *verbsTrace) cleanup() {
	inst := filepath.Join(t.root, "instances", traceInstance)
	if _, err := os.Stat(inst); err == nil {
		_ = os.WriteFile(filepath.Join(inst, "events", traceGroup, "enable"), []byte("0"), 0)
		_ = os.Remove(inst)
	}
	defs, _ := os.ReadFile(filepath.Join(t.root, "kprobe_events"))
	for _, line := range strings.Split(string(defs), "\n") {
		// "p:rdmalab/query_gid_3 ib_uverbs:…" → "-:rdmalab/query_gid_3"
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if _, ev, ok := strings.Cut(f[0], ":"); ok && strings.HasPrefix(ev, traceGroup+"/") {
			_ = appendFile(filepath.Join(t.root, "kprobe_events"), "-:"+ev)
		}
	}
}

// tracefsRoot finds tracefs, mounting it where the guest has not.
func tracefsRoot() (string, error) {
	for _, d := range []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"} {
		if _, err := os.Stat(filepath.Join(d, "kprobe_events")); err == nil {
			return d, nil
		}
	}
	d := "/sys/kernel/tracing"
	if err := unix.Mount("tracefs", d, "tracefs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=700"); err != nil {
		return "", fmt.Errorf("mount tracefs on %s: %w", d, err)
	}
	if _, err := os.Stat(filepath.Join(d, "kprobe_events")); err != nil {
		return "", errors.New("this kernel has no kprobe events")
	}
	return d, nil
}

// appendFile writes line to a tracefs control file without truncating it
// (kprobe_events opened for writing without O_APPEND drops every probe).
func appendFile(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(line + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// traceLine is one event of tracefs's text format:
//
//	prog-345     [001] .....   123.456789: reg_mr_5: (ib_uverbs_write+0x2c5/0x4b0 [ib_uverbs] <- ib_uverbs_reg_mr) ret=-12
//
// The task's name may hold dashes and spaces; the last "-PID" before the
// CPU ends it.
var traceLine = regexp.MustCompile(`^\s*(.+)-(\d+)\s+\[\d+\]\s+\S*\s*[\d.]+: ([a-z_]+)_(\d+): \([^)]*\)\s*(.*)$`)

// parseTrace turns the tracefs text into the record's lines, keeping only
// the events of tasks named comm. The arguments of an entry probe whose
// event also has return probes wait for that task's next return of the
// event and lead its line (one line a call); an entry no return followed
// is a line of its own.
func parseTrace(raw []byte, comm string) string {
	var b strings.Builder
	type key struct{ event, pid string }
	held := map[key]string{}
	var order []key // held entries, in the order they came
	line := func(event, pid, args string) {
		l := event + " " + comm + " " + pid
		if args != "" {
			l += " " + args
		}
		b.WriteString(l + "\n")
	}
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		m := traceLine.FindStringSubmatch(sc.Text())
		if m == nil || strings.TrimSpace(m[1]) != comm {
			continue
		}
		event, pid, args := m[3], m[2], strings.TrimSpace(m[5])
		i, _ := strconv.Atoi(m[4])
		if i >= len(traceProbes) || !joined(event) {
			line(event, pid, args)
			continue
		}
		k := key{event, pid}
		if traceProbes[i].kind == "p" {
			if prev, ok := held[k]; ok { // two entries: the first never returned here
				line(event, pid, prev)
			} else {
				order = append(order, k)
			}
			held[k] = args
			continue
		}
		if prev, ok := held[k]; ok {
			args = strings.TrimSpace(prev + " " + args)
			delete(held, k)
			order = slices.DeleteFunc(order, func(o key) bool { return o == k })
		}
		line(event, pid, args)
	}
	for _, k := range order {
		line(k.event, k.pid, held[k])
	}
	return b.String()
}

// joined reports whether event has both an entry and a return probe, so
// that parseTrace makes one line of the two.
func joined(event string) bool {
	var p, r bool
	for _, t := range traceProbes {
		if t.event == event {
			p = p || t.kind == "p"
			r = r || t.kind == "r"
		}
	}
	return p && r
}
