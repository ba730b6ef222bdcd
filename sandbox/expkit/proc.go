package expkit

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// MemAvailable reads MemAvailable from /proc/meminfo, in bytes: the free
// memory the lessons set beside a failed pin.
func MemAvailable() (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, fmt.Errorf("read meminfo: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != "MemAvailable" {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			break
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse MemAvailable %q: %w", v, err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("no MemAvailable in /proc/meminfo")
}

// StatusBytes reads a "kB" field of /proc/self/status ("VmLck", "VmPin")
// in bytes; 0 when it is missing.
func StatusBytes(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			fs := strings.Fields(v)
			if len(fs) > 0 {
				kb, _ := strconv.ParseInt(fs[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}
