package e2e

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startTermWorker starts `labserver worker --terminals 1` as name, joined
// to the lab's NATS address with the token, its guests from vmDir.
func startTermWorker(t *testing.T, addr, name, vmDir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(labBinary, "worker", "--join", "nats://"+addr, "--token", "e2e-worker-token", "--name", name,
		"--backend", "none", "--host-slots", "0", "--terminals", "1")
	cmd.Env = append(os.Environ(), "LAB_VM_DIR="+vmDir)
	log, err := os.Create(filepath.Join(t.TempDir(), name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			t.Logf("worker %s said:\n%s", name, b)
		}
	})
	return cmd
}

// waitTermMax waits until /api/lab counts at least n learner terminals
// (the workers' heartbeats say they host them).
func waitTermMax(t *testing.T, url string, n int) {
	t.Helper()
	for i := 0; ; i++ {
		var lab struct {
			Terminals *struct {
				Max int `json:"max"`
			} `json:"terminals"`
		}
		if res, err := http.Get(url + "/api/lab"); err == nil {
			_ = json.NewDecoder(res.Body).Decode(&lab)
			res.Body.Close()
		}
		if lab.Terminals != nil && lab.Terminals.Max >= n {
			return
		}
		if i > 600 {
			t.Fatalf("/api/lab never counted %d terminals", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestTerminalOnWorker: lesson 01's terminal when the lab server has no
// guests of its own and two `labserver worker --terminals 1` processes
// host them. The learner's shell runs on a worker's guest: ibv_devices
// lists rxe0, the memlock task's check runs there (fails, then passes
// after ulimit), a reload finds the same shell; the worker killed, the
// page says the machine failed and its files are gone, and a new machine
// on the other worker answers in the same tab (the file is not there, the
// check sees the boot limit again).
func TestTerminalOnWorker(t *testing.T) {
	flow(t)
	dir := t.TempDir()
	vmDir := guestDir
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	natsAddr := ln.Addr().String()
	ln.Close()
	lab, err := startLab(filepath.Join(dir, "lab"), []string{"LAB_BACKEND=none", "LAB_WORKERS_LISTEN=" + natsAddr,
		"LAB_NATS_TOKEN=e2e-worker-token", "LAB_TERMINALS=1", "LAB_TERMINALS_PER_ADDR=2"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := lab.Stop(labStopTimeout); err != nil {
			t.Errorf("stopping the labserver: %v", err)
		}
	})
	wa := startTermWorker(t, natsAddr, "wa", vmDir)
	waitTermMax(t, lab.URL, 1)
	const lesson = "/lessons/01-why-rdma"

	one := newBrowser(t, lab)
	one.open(lesson + "?lang=en")
	one.click(`[data-testid=terminal-open]`)
	waitTerm(one, "learner@rdmalab-guest")
	typeLine(one, "ibv_devices; echo learner-one > ~/mine; echo wrote-$((40+2))")
	waitTerm(one, "wrote-42")
	if out := eval[string](one, termText); !strings.Contains(out, "rxe0") {
		t.Errorf("ibv_devices on the worker's guest lists no rxe0:\n%s", out)
	}
	status, text := checkTask(one, "memlock")
	if status != "failed" || !strings.Contains(text, "still 8192 KiB") {
		t.Errorf("memlock before ulimit, on the worker: %s %q", status, text)
	}
	typeLine(one, "ulimit -l 65536; echo lim-$(ulimit -l)")
	waitTerm(one, "lim-65536")
	status, text = checkTask(one, "memlock")
	if status != "passed" || !strings.Contains(text, "65536 KiB") {
		t.Errorf("memlock after ulimit, on the worker: %s %q", status, text)
	}

	// A reload: the same shell on the same worker, with its scrollback.
	one.open(lesson + "?lang=en")
	waitTerm(one, "lim-65536")
	typeLine(one, "cat ~/mine; echo same-$((5+5))")
	waitTerm(one, "same-10")
	if !strings.Contains(eval[string](one, termText), "learner-one\n") {
		t.Errorf("after a reload the file is not there:\n%s", eval[string](one, termText))
	}

	// The worker dies: the page says so and a new machine on the other
	// worker answers in the same tab.
	startTermWorker(t, natsAddr, "wb", vmDir)
	waitTermMax(t, lab.URL, 2)
	_ = syscall.Kill(-wa.Process.Pid, syscall.SIGKILL)
	one.waitFor("the page says the machine was lost",
		`document.querySelector('[data-testid=terminal-status]').textContent.includes("its files are gone")`, guestTimeout)
	one.waitFor("the new machine's note",
		`document.querySelector('[data-testid=terminal-status]').textContent.includes("This is a new machine on another computer")`, guestTimeout)
	typeLine(one, "cat ~/mine 2>/dev/null || echo absent-$((1+1))")
	waitTerm(one, "absent-2")
	status, text = checkTask(one, "memlock")
	if status != "failed" || !strings.Contains(text, "still 8192 KiB") {
		t.Errorf("memlock on the new machine: %s %q", status, text)
	}
}
