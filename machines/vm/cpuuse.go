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
