package vm

import (
	"os/exec"
	"testing"
	"time"
)

// TestProcessDemandStarved: a guest starved of CPU is not an idle one. A
// shell spinning at nice 19 on one CPU beside two spinners at nice 0 gets
// little CPU (its weight is 15 to their 2048) but is runnable the whole
// time, so its demand grows by about the wall time while its CPU time
// barely moves: the idle pause, which once read CPU time alone, paused
// such a guest mid-command (TestIdlePause under stress-ng: the learner's
// echo never came). A process that does not exist has no demand.
func TestProcessDemandStarved(t *testing.T) {
	spin := func(nice string) *exec.Cmd {
		c := exec.Command("taskset", "-c", "0", "nice", "-n", nice, "sh", "-c", "while :; do :; done")
		if err := c.Start(); err != nil {
			t.Skipf("taskset and nice are needed to starve a process on one CPU: %v", err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
		return c
	}
	spin("0")
	spin("0")
	starved := spin("19")
	pid := starved.Process.Pid
	time.Sleep(300 * time.Millisecond) // taskset and nice exec into sh
	cpu0, d0, at := ProcessCPU(pid), ProcessDemand(pid), time.Now()
	time.Sleep(2 * time.Second)
	wall := time.Since(at)
	cpu, demand := ProcessCPU(pid)-cpu0, ProcessDemand(pid)-d0
	t.Logf("in %s: CPU %s (%.1f %%), demand %s (%.1f %%)", wall.Round(time.Millisecond),
		cpu, 100*float64(cpu)/float64(wall), demand, 100*float64(demand)/float64(wall))
	if float64(demand) < 0.5*float64(wall) {
		t.Errorf("a process runnable the whole %s shows a demand of %s", wall.Round(time.Millisecond), demand)
	}
	if demand < cpu {
		t.Errorf("demand %s below the CPU time %s it includes", demand, cpu)
	}
	if got := ProcessDemand(1 << 30); got != 0 {
		t.Errorf("a process that does not exist has a demand of %s", got)
	}
}
