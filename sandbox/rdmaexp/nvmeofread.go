package rdmaexp

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The lab's 4 KiB random reader: depth threads, each with one read
// outstanding (pread on the block device opened with O_DIRECT, so every
// read reaches the device and none is served from the page cache) — what
// fio does with --ioengine=psync --direct=1 --rw=randread --bs=4k
// --numjobs=depth. fio itself is not in the guest: Debian's build links
// Ceph, GlusterFS and ICU (about 80 MB of libraries), which would more than
// double the guest image and its memory, for this one loop.

const readBlock = 4096

// readResult is one point of the sweep.
type readResult struct {
	IOs      int
	Elapsed  time.Duration
	Lats     []time.Duration // sorted
	BusyCPU  time.Duration   // all CPUs, all contexts: wall × CPUs − idle (/proc/stat)
	ProcCPU  time.Duration   // the reading process (getrusage)
	RoCEPkts int64           // packets the RDMA devices sent meanwhile
}

func (r readResult) iops() float64 { return float64(r.IOs) / r.Elapsed.Seconds() }

// pct is the p-th percentile latency in µs (nearest rank).
func (r readResult) pct(p float64) float64 {
	if len(r.Lats) == 0 {
		return 0
	}
	i := int(p/100*float64(len(r.Lats))+0.5) - 1
	i = max(0, min(i, len(r.Lats)-1))
	return float64(r.Lats[i].Nanoseconds()) / 1e3
}

// cpuPerIO is µs of CPU per read: all CPUs, and the reader alone.
func (r readResult) cpuPerIO() (all, reader float64) {
	if r.IOs == 0 {
		return 0, 0
	}
	return float64(r.BusyCPU.Microseconds()) / float64(r.IOs), float64(r.ProcCPU.Microseconds()) / float64(r.IOs)
}

// idleTime is the idle (and iowait) time of all CPUs from /proc/stat's
// "cpu" line. The kernel reports idle from its precise nohz accounting,
// while user and system time are sampled by the tick — and under TCG
// ticks go missing (a busy run showed the reader alone above the sum of
// the sampled busy times). So busy time is wall time × CPUs − idle.
func idleTime() (time.Duration, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var sum int64
	for _, i := range []int{4, 5} {
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %w", err)
		}
		sum += v
	}
	return time.Duration(sum) * (time.Second / userHZ), nil
}

// userHZ is the unit of /proc/stat: USER_HZ, 100 on x86 Linux.
const userHZ = 100

func selfCPU() time.Duration {
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// blockSize is a block device's size in bytes, from sysfs.
func blockSize(disk string) (int64, error) {
	b, err := os.ReadFile("/sys/block/" + disk + "/size")
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n * 512, err
}

// randRead reads 4 KiB blocks at random offsets of /dev/disk with depth
// threads for dur; roce reads the RDMA devices' sent-packet total.
func randRead(ctx context.Context, disk string, depth int, dur time.Duration, roce func() int64) (readResult, error) {
	size, err := blockSize(disk)
	if err != nil || size < readBlock {
		return readResult{}, fmt.Errorf("the size of /dev/%s: %v", disk, err)
	}
	fd, err := unix.Open("/dev/"+disk, unix.O_RDONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	if err != nil {
		return readResult{}, fmt.Errorf("open /dev/%s with O_DIRECT: %w", disk, err)
	}
	defer unix.Close(fd)
	// O_DIRECT wants aligned buffers: one page each, from mmap
	mem, err := unix.Mmap(-1, 0, depth*readBlock, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return readResult{}, err
	}
	defer unix.Munmap(mem)
	blocks := size / readBlock
	lats := make([][]time.Duration, depth)
	errs := make([]error, depth)
	idle0, err := idleTime()
	if err != nil {
		return readResult{}, err
	}
	proc0, pk0 := selfCPU(), roce()
	start := time.Now()
	deadline := start.Add(dur)
	var wg sync.WaitGroup
	for i := range depth {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread() // one thread per outstanding read
			defer runtime.UnlockOSThread()
			rng := rand.New(rand.NewPCG(uint64(start.UnixNano()), uint64(i)))
			buf := mem[i*readBlock : (i+1)*readBlock]
			for ctx.Err() == nil {
				t := time.Now()
				if !t.Before(deadline) {
					return
				}
				if _, err := unix.Pread(fd, buf, rng.Int64N(blocks)*readBlock); err != nil {
					errs[i] = fmt.Errorf("pread /dev/%s: %w", disk, err)
					return
				}
				lats[i] = append(lats[i], time.Since(t))
			}
		}()
	}
	wg.Wait()
	r := readResult{Elapsed: time.Since(start), ProcCPU: selfCPU() - proc0, RoCEPkts: roce() - pk0}
	idle1, err := idleTime()
	if err != nil {
		return r, err
	}
	r.BusyCPU = max(0, time.Duration(runtime.NumCPU())*r.Elapsed-(idle1-idle0))
	for i := range depth {
		if errs[i] != nil {
			return r, errs[i]
		}
		r.Lats = append(r.Lats, lats[i]...)
	}
	if ctx.Err() != nil {
		return r, ctx.Err()
	}
	slices.Sort(r.Lats)
	r.IOs = len(r.Lats)
	return r, nil
}
