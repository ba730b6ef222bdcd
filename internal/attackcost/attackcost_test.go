package attackcost

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary be the watched process: with
// ATTACKCOST_CHILD=1 it touches 96 MiB, says so and waits.
func TestMain(m *testing.M) {
	if os.Getenv("ATTACKCOST_CHILD") == "1" {
		b := make([]byte, 96<<20)
		for i := range b {
			b[i] = 1
		}
		fmt.Println("touched")
		time.Sleep(time.Minute)
		fmt.Println(b[len(b)-1])
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestWatchProcess: a process that touches 96 MiB while watched peaks at
// 96 MiB or more, measured as its own high-water mark since the watch.
func TestWatchProcess(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "ATTACKCOST_CHILD=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	m := Watch(cmd.Process.Pid, func() int64 { return 7 })
	buf := make([]byte, 8)
	if _, err := out.Read(buf); err != nil || !strings.HasPrefix(string(buf), "touched") {
		t.Fatalf("the child: %q %v", buf, err)
	}
	c := m.Stop()
	t.Logf("%s", c)
	if c.PeakRSS < 96<<20 || c.Kind != Process || c.Since != "the attack" {
		t.Errorf("a child that touched 96 MiB: %+v, want a peak of at least 96 MiB since the attack", c)
	}
	if c.LogBytes != 0 || c.Race {
		t.Errorf("log %d, race %v: want no log growth, and no race factor for another process", c.LogBytes, c.Race)
	}
}

var sink []byte

// TestWatchSelf: 64 MiB touched in the test process show as heap growth
// and in its peak; the log counted is what grew.
func TestWatchSelf(t *testing.T) {
	n := int64(100)
	c := Measure(t, "64 MiB", func() int64 { return n }, func() {
		sink = make([]byte, 64<<20)
		for i := range sink {
			sink[i] = 1
		}
		time.Sleep(3 * sampleEvery)
		n += 5000
	})
	sink = nil
	if c.HeapGrowth < 64<<20 || c.PeakRSS < 64<<20 || c.LogBytes != 5000 || c.Kind != InProcess {
		t.Errorf("%+v: want heap +64 MiB or more, a peak past it, log +5000", c)
	}
}

// TestLogCounter: what is written is counted and passed on.
func TestLogCounter(t *testing.T) {
	var b strings.Builder
	c := &LogCounter{W: &b}
	fmt.Fprint(c, "one line\n")
	fmt.Fprint(c, "two\n")
	if c.Len() != 13 || b.String() != "one line\ntwo\n" {
		t.Errorf("counted %d, passed on %q", c.Len(), b.String())
	}
	if n, err := (&LogCounter{}).Write([]byte("x")); n != 1 || err != nil {
		t.Errorf("with no W: %d %v", n, err)
	}
}

// recorder is a testing.TB that keeps what would fail the test.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Errorf(f string, a ...any) { r.errs = append(r.errs, fmt.Sprintf(f, a...)) }
func (r *recorder) Logf(string, ...any)       {}
func (r *recorder) Helper()                   {}

// TestCheckBounds: a cost past either bound fails the test; one within
// both does not; under -race the memory bound is RaceFactor times.
func TestCheckBounds(t *testing.T) {
	for _, tc := range []struct {
		c    Cost
		errs int
	}{
		{Cost{Kind: Process, PeakRSS: 100 << 20, LogBytes: 1 << 20}, 0},
		{Cost{Kind: Process, PeakRSS: MemMax + 1}, 1},
		{Cost{Kind: Process, LogBytes: LogMax + 1}, 1},
		{Cost{Kind: InProcess, PeakRSS: MemMax + 1, LogBytes: LogMax + 1}, 2},
		{Cost{Kind: InProcess, PeakRSS: MemMax + 1, Race: true}, 0},
		{Cost{Kind: InProcess, PeakRSS: RaceFactor*MemMax + 1, Race: true}, 1},
	} {
		r := &recorder{TB: t}
		tc.c.Check(r, "case")
		if len(r.errs) != tc.errs {
			t.Errorf("%s: %d failures %q, want %d", tc.c, len(r.errs), r.errs, tc.errs)
		}
	}
}
