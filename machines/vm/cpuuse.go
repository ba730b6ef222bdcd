package vm

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// userHZ is the unit of /proc/PID/stat's CPU times (USER_HZ, 100 on
// every Linux the lab runs on: the kernel exports it as a fixed ABI).
const userHZ = 100

// ProcessCPU is the CPU time process pid has used so far, user and
// system, from /proc/PID/stat (fields 14 and 15); 0 when it cannot be
// read (no such process).
func ProcessCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces and parentheses: count
	// from its last ")".
	f := bytes.Fields(b[bytes.LastIndexByte(b, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseInt(string(f[11]), 10, 64)
	stime, err2 := strconv.ParseInt(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(utime+stime) * time.Second / userHZ
}

// ProcessDemand is the CPU time process pid has used so far plus the time
// its threads spent runnable, waiting for a CPU: the sum of the first two
// fields of /proc/PID/task/*/schedstat. A process that wants the CPU
// accrues it at one core per runnable thread whether it gets the CPU or
// not, so on a loaded machine a starved guest (its QEMU at nice 10 beside
// busier work) does not look idle the way its CPU time alone makes it
// look. Threads that ended take their share with them, which only ever
// makes it lower. Falls back to ProcessCPU where schedstat is missing
// (a kernel without CONFIG_SCHED_INFO).
func ProcessDemand(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	dir := fmt.Sprintf("/proc/%d/task", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var sum int64
	read := 0
	for _, e := range ents {
		b, err := os.ReadFile(dir + "/" + e.Name() + "/schedstat")
		if err != nil {
			continue
		}
		f := bytes.Fields(b)
		if len(f) < 2 {
			continue
		}
		run, err1 := strconv.ParseInt(string(f[0]), 10, 64)
		wait, err2 := strconv.ParseInt(string(f[1]), 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		sum += run + wait
		read++
	}
	if read == 0 {
		return ProcessCPU(pid)
	}
	return time.Duration(sum)
}
