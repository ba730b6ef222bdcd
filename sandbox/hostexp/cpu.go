package hostexp

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// cpuClock is the CPU's clock in GHz and where the figure came from.
type cpuClock struct {
	GHz    float64
	Source string
}

// readCPUClock takes the clock from /proc/cpuinfo ("cpu MHz", averaged
// over CPUs), else cpufreq's maximum, else the "@ 2.10GHz" of the model
// name. ok is false when the machine states none of them.
func readCPUClock() (cpuClock, bool) {
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		var sum float64
		var n int
		var model string
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if !ok {
				continue
			}
			switch strings.TrimSpace(k) {
			case "cpu MHz":
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && f > 0 {
					sum += f
					n++
				}
			case "model name":
				model = v
			}
		}
		if n > 0 {
			return cpuClock{GHz: sum / float64(n) / 1000, Source: "/proc/cpuinfo cpu MHz"}, true
		}
		if i := strings.LastIndex(model, "@"); i >= 0 {
			s := strings.TrimSpace(model[i+1:])
			if g, ok := strings.CutSuffix(s, "GHz"); ok {
				if f, err := strconv.ParseFloat(g, 64); err == nil && f > 0 {
					return cpuClock{GHz: f, Source: "/proc/cpuinfo model name"}, true
				}
			}
		}
	}
	if b, err := os.ReadFile("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"); err == nil {
		if khz, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64); err == nil && khz > 0 {
			return cpuClock{GHz: khz / 1e6, Source: "cpufreq cpuinfo_max_freq"}, true
		}
	}
	return cpuClock{}, false
}

// threadClock is the CPU-time clock of one thread of this process: the
// kernel's encoding of a per-thread CPUCLOCK_SCHED clock id, the same one
// pthread_getcpuclockid returns. It lets a sampler read another thread's
// CPU time with nanosecond resolution (the /proc stat ticks are 10 ms).
func threadClock(tid int) int32 {
	const cpuclockPerthread, cpuclockSched = 4, 2
	return int32(^uint32(tid)<<3 | cpuclockPerthread | cpuclockSched)
}

// threadCPU returns the CPU time consumed so far by thread tid of this
// process (user + system, including the kernel's work on its behalf).
func threadCPU(tid int) (time.Duration, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(threadClock(tid), &ts); err != nil {
		return 0, fmt.Errorf("clock_gettime(thread %d): %w", tid, err)
	}
	return time.Duration(ts.Nano()), nil
}
