package tsc

// rdtsc reads the time-stamp counter (cycles_amd64.s).
func rdtsc() uint64

// Now reads a fast, monotonic counter: the CPU's time-stamp counter, as
// perftest's get_cycles does, in Go assembly so it costs neither a cgo call
// nor a system call. time.Now in the lab's TCG guest is a system call plus
// an emulated HPET read under QEMU's global lock (the kernel marks the TSC
// unstable there): microseconds, more than some round trips. Convert with a
// Clock calibrated over the whole measurement.
func Now() uint64 { return rdtsc() }
