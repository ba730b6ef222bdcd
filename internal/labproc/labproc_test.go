package labproc

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv marks the child test process TestServerDiesWithTest starts.
const helperEnv = "LABPROC_TEST_HELPER_DIR"

// TestServerDiesWithTest kills a test process that started a server and
// checks the server goes with it: a `go test` killed (a timeout, ^C, a
// CI job cut) must not leave a labserver and its guests running.
func TestServerDiesWithTest(t *testing.T) {
	bin := (&Once{Dir: t.TempDir()}).Get(t, "starts labserver as a process")
	helper := exec.Command(os.Args[0], "-test.run=^TestHelperStartAndHang$", "-test.v")
	helper.Env = append(os.Environ(), helperEnv+"="+t.TempDir(), "LAB_TEST_LABSERVER="+bin)
	helper.Stderr = os.Stderr
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	pid := 0
	var seen []string
	sc := bufio.NewScanner(out)
	for pid == 0 && sc.Scan() {
		seen = append(seen, sc.Text())
		fmt.Sscanf(sc.Text(), "labserver pid %d", &pid)
	}
	if pid == 0 {
		_ = helper.Process.Kill()
		_ = helper.Wait()
		t.Fatalf("the helper never said its server's pid:\n%s", strings.Join(seen, "\n"))
	}
	if !alive(pid) {
		t.Fatalf("server %d is not running before its test process is killed", pid)
	}
	_ = helper.Process.Signal(syscall.SIGKILL)
	_ = helper.Wait()
	// A bound on a wait, not on speed: SIGKILL is delivered at once, and
	// only a loaded machine's scheduler stands between it and the exit.
	deadline := time.Now().Add(30 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(-pid, syscall.SIGKILL) // not left running by this test
			t.Fatalf("labserver %d still runs 30 s after the test process that started it was killed", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestHelperStartAndHang is TestServerDiesWithTest's child: it starts a
// server, says its pid and waits to be killed. It skips in any other run.
func TestHelperStartAndHang(t *testing.T) {
	dir := os.Getenv(helperEnv)
	if dir == "" {
		t.Skip("the child process of TestServerDiesWithTest")
	}
	s, err := Start(Options{Bin: os.Getenv("LAB_TEST_LABSERVER"), Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("labserver pid %d\n", s.Pid)
	select {}
}

// alive is whether pid runs: it exists and is not a zombie waiting for
// its new parent to reap it.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command's closing parenthesis.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
