package rdmaexp

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clkTck is USER_HZ, the unit of utime/stime in /proc/<pid>/stat. It is 100
// on every Linux ABI the lab runs on (sysconf(_SC_CLK_TCK) needs libc).
const clkTck = 100

// procCPU is one process's CPU use so far, from /proc.
type procCPU struct {
	UTime, STime   int64 // ticks of 1/clkTck s, all threads
	VoluntaryCS    int64 // voluntary context switches of the main thread
	NonvoluntaryCS int64
}

// Ticks is user plus system time in ticks.
func (p procCPU) Ticks() int64 { return p.UTime + p.STime }

// readProcCPU reads utime/stime from /proc/pid/stat and the context
// switches from /proc/pid/status.
func readProcCPU(pid int) (procCPU, error) {
	var p procCPU
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return p, fmt.Errorf("read CPU time of process %d: %w", pid, err)
	}
	// the command name (field 2) may hold spaces: fields count from ')'
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return p, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return p, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(f))
	}
	// f[0] is field 3 (state); utime is field 14, stime field 15
	p.UTime, _ = strconv.ParseInt(f[11], 10, 64)
	p.STime, _ = strconv.ParseInt(f[12], 10, 64)
	st, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return p, fmt.Errorf("read context switches of process %d: %w", pid, err)
	}
	defer st.Close()
	sc := bufio.NewScanner(st)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch k {
		case "voluntary_ctxt_switches":
			p.VoluntaryCS = n
		case "nonvoluntary_ctxt_switches":
			p.NonvoluntaryCS = n
		}
	}
	return p, nil
}

// kernelCPU is the machine's time in the kernel and in softirq (where
// Soft-RoCE moves packets), from the "cpu" line of /proc/stat, in ticks.
type kernelCPU struct {
	System, SoftIRQ int64
}

func readKernelCPU() (kernelCPU, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return kernelCPU{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 8 && fs[0] == "cpu" {
			sys, _ := strconv.ParseInt(fs[3], 10, 64)
			soft, _ := strconv.ParseInt(fs[7], 10, 64)
			return kernelCPU{System: sys, SoftIRQ: soft}, nil
		}
	}
	return kernelCPU{}, fmt.Errorf("no cpu line in /proc/stat")
}

// threadSched is one thread's exact run time (schedstat, in nanoseconds,
// so it cannot round to zero the way utime/stime ticks of 10 ms can) and
// its voluntary context switches (each one a sleep, so each wakeup).
type threadSched struct {
	RunNs       int64
	VoluntaryCS int64
}

// readThreadSched reads /proc/pid/task/tid/schedstat and .../status.
func readThreadSched(pid, tid int) (threadSched, error) {
	var t threadSched
	dir := fmt.Sprintf("/proc/%d/task/%d/", pid, tid)
	b, err := os.ReadFile(dir + "schedstat")
	if err != nil {
		return t, fmt.Errorf("read the run time of thread %d: %w", tid, err)
	}
	f := strings.Fields(string(b))
	if len(f) < 1 {
		return t, fmt.Errorf("parse %sschedstat: %q", dir, b)
	}
	t.RunNs, _ = strconv.ParseInt(f[0], 10, 64)
	st, err := os.ReadFile(dir + "status")
	if err != nil {
		return t, fmt.Errorf("read the context switches of thread %d: %w", tid, err)
	}
	for _, line := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(line, "voluntary_ctxt_switches:"); ok {
			t.VoluntaryCS, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return t, nil
}
