package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/rdmalab/rdmalab/internal/labproc"
	"github.com/rdmalab/rdmalab/sandbox"
)

// wsTerm is a learner's terminal over the lab's WebSocket, as the browser
// opens it: everything the shell printed, kept for markers.
type wsTerm struct {
	t    *testing.T
	c    *websocket.Conn
	mu   sync.Mutex
	out  []byte // the output, its start dropped beyond 8 MiB
	base int    // bytes dropped from out's start
	news []string
	done chan struct{}
}

func openTerminal(t *testing.T, l *learner) *wsTerm {
	t.Helper()
	u := "ws" + strings.TrimPrefix(l.base, "http") + "/api/terminal?rows=40&cols=120"
	c, _, err := websocket.Dial(context.Background(), u, &websocket.DialOptions{
		HTTPClient: l.c, HTTPHeader: http.Header{"Origin": {l.base}}})
	if err != nil {
		t.Fatalf("open the terminal: %v", err)
	}
	c.SetReadLimit(1 << 20)
	w := &wsTerm{t: t, c: c, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			typ, b, err := c.Read(context.Background())
			if err != nil {
				return
			}
			w.mu.Lock()
			if typ == websocket.MessageText {
				w.news = append(w.news, string(b))
			} else {
				w.out = append(w.out, b...)
				if len(w.out) > 8<<20 {
					drop := len(w.out) - 4<<20
					w.out = append([]byte(nil), w.out[drop:]...)
					w.base += drop
				}
			}
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *wsTerm) send(keys string) {
	w.t.Helper()
	b, _ := json.Marshal(map[string]string{"t": "in", "d": keys})
	if err := w.c.Write(context.Background(), websocket.MessageText, b); err != nil {
		w.t.Fatalf("type %q: %v", keys, err)
	}
}

// until waits for re in the output after offset from (a total byte
// count), returning the match and the new offset; it fails if the
// connection ends first. Markers are printed by arithmetic so that the
// echoed command line never matches.
func (w *wsTerm) until(from int, re *regexp.Regexp) (string, int) {
	w.t.Helper()
	for {
		w.mu.Lock()
		i := max(from-w.base, 0)
		if m := re.FindIndex(w.out[i:]); m != nil {
			s, end := string(w.out[i+m[0]:i+m[1]]), w.base+i+m[1]
			w.mu.Unlock()
			return s, end
		}
		n, news := w.base+len(w.out), strings.Join(w.news, "\n")
		w.mu.Unlock()
		select {
		case <-w.done:
			w.t.Fatalf("the terminal closed before %s (%d bytes; news %s)", re, n, news)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (w *wsTerm) total() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.base + len(w.out)
}

// procStatus is a field of /proc/PID/status (kB for memory).
func procStatus(t *testing.T, pid int, field string) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.Atoi(strings.Fields(rest)[0])
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// nice is the niceness of pid (field 19 of /proc/PID/stat).
func nice(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	n, _ := strconv.Atoi(f[16])
	return n
}

// TestTerminalAbuse: a learner in their terminal writes to the guest's
// device nodes, eats all the memory they may, floods the terminal with
// `yes` and /dev/urandom and starts a fork bomb. What must show: each hits
// its bound inside the learner's own guest (the device writes are refused,
// the memory hog is OOM-killed inside the learner's cgroup, the bomb stops
// at pids.max), while the host stays healthy (/healthz answers, labserver's
// and every QEMU's memory bounded, the learner's QEMU niced) and another
// learner's RDMA run on the experiment guest completes.
func TestTerminalAbuse(t *testing.T) {
	dir := t.TempDir()
	vmDir := filepath.Join(dir, "vm")
	bin := labserver(t)
	if out, err := exec.Command(bin, "vm", "build", "--dir", vmDir).CombinedOutput(); err != nil {
		t.Fatalf("labserver vm build: %v\n%s", err, out)
	}
	// LAB_TERMINAL_IDLE: under load (stress-ng beside make test) the
	// abuser's guest, its CPU taken by the bomb and the floods, took more
	// than the default 10 minutes to run the builtins that stop them, and
	// the machine was reclaimed as unused mid-test.
	srv := start(t, labproc.Options{Dir: dir, Env: []string{"LAB_BACKEND=vm", "LAB_VM_DIR=" + vmDir,
		"LAB_GUESTS=1", "LAB_TERMINALS=1", "LAB_VM_MEMORY=256", "LAB_TERMINAL_IDLE=1h"}})
	abuser := newLearner(t, srv.URL)
	abuser.must("GET", "/?lang=en", "", 200)
	other := newLearner(t, srv.URL)
	other.must("GET", "/?lang=en", "", 200)
	// The experiment guest is up first (a first run waits for its boot).
	first := other.submit(`{"experiment":"pingpong","params":{"transport":"tcp","iterations":10}}`)
	if v := other.waitRun(first, guestBoot, "a final status", final); v.Status != sandbox.StatusDone {
		t.Fatalf("the other learner's first run ended %s (%s)", v.Status, v.Error)
	}

	w := openTerminal(t, abuser)
	defer w.c.CloseNow()
	_, at := w.until(0, regexp.MustCompile(`learner@rdmalab-guest`))

	// Device nodes: /dev/mem and /dev/port are root's, and the shell is
	// the ordinary user learner; the guest has no disk.
	w.send("dd if=/dev/zero of=/dev/mem bs=4096 count=256; dd if=/dev/zero of=/dev/port bs=1 count=16; dd if=/dev/zero of=/dev/vda bs=1M count=4; echo devs-$((3*11))\r")
	_, end := w.until(at, regexp.MustCompile(`devs-33`))
	w.mu.Lock()
	devs := string(w.out[max(at-w.base, 0) : end-w.base])
	w.mu.Unlock()
	t.Logf("device writes:\n%s", devs)
	if strings.Count(devs, "Operation not permitted")+strings.Count(devs, "Permission denied") < 2 {
		t.Errorf("writes to /dev/mem and /dev/port were not both refused:\n%s", devs)
	}
	at = end

	// Memory: a subshell grows until the kernel OOM-kills it inside the
	// learner's cgroup; the shell and the guest's agent live on.
	w.send("(x=$(head -c 400000000 /dev/zero | tr '\\0' a); echo kept ${#x}); cat /sys/fs/cgroup/learner/memory.events; echo mem-$((6*6))\r")
	_, end = w.until(at, regexp.MustCompile(`mem-36`))
	oom, _ := w.until(at, regexp.MustCompile(`oom_kill [0-9]+`))
	if oom == "oom_kill 0" {
		t.Errorf("no OOM kill in the learner's cgroup: %s", oom)
	}
	t.Logf("memory hog: %s", oom)
	at = end

	// Floods and a fork bomb, all at once, in the background.
	w.send("yes & cat /dev/urandom & sleep 1; bomb() { bomb | bomb & }; bomb\r")
	// Another learner's RDMA experiment on the experiment guest completes
	// while they go, and the server answers.
	other.must("GET", "/healthz", "", 200)
	run := other.submit(`{"experiment":"pingpong","params":{"transport":"tcp","iterations":200}}`)
	v := other.waitRun(run, guestBoot, "a final status", final)
	if v.Status != sandbox.StatusDone {
		t.Errorf("the other learner's run during the abuse ended %s (%s)", v.Status, v.Error)
	}
	t.Logf("the other learner's run during the abuse: %s; %d bytes of terminal output so far", v.Status, w.total())
	other.must("GET", "/healthz", "", 200)

	// The bomb meets a bound of the learner's cgroup: pids.max, or the
	// memory limit first (its shells OOM-killed; seen on a quiet host,
	// where the bomb's bash processes filled memory.max before 256 pids).
	// The floods are stopped and the counts read with shell builtins only:
	// no fork is left. The counts are read again until a bound shows: on
	// a starved guest (nice 10 beside stress-ng) the bomb had not reached
	// one by the time the other learner's run ended, and read "pe=max 0".
	w.send("kill %1 %2\r")
	var oomBefore int
	fmt.Sscanf(oom, "oom_kill %d", &oomBefore)
	var bound string
	var pidsMax, oomAfter, reads int
	for deadline := time.Now().Add(5 * time.Minute); ; {
		w.send("read -r l < /sys/fs/cgroup/learner/pids.events; o=; while read -r k v; do [ \"$k\" = oom_kill ] && o=$v; done < /sys/fs/cgroup/learner/memory.events; echo \"pe=$l om=$o\"\r")
		bound, at = w.until(at, regexp.MustCompile(`pe=max [0-9]+ om=[0-9]+`))
		fmt.Sscanf(bound, "pe=max %d om=%d", &pidsMax, &oomAfter)
		reads++
		if pidsMax > 0 || oomAfter > oomBefore || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Second)
	}
	if pidsMax == 0 && oomAfter <= oomBefore {
		t.Errorf("the fork bomb met no bound of the learner's cgroup in 5 min: %s (OOM kills before it: %d)", bound, oomBefore)
	}
	t.Logf("fork bomb: %s after %d reads (pids.max refusals, OOM kills; %d before); %d bytes of output reached the browser", bound, reads, oomBefore, w.total())

	// The builtin exit ends the shell, and with it the bomb and the floods:
	// the terminal says so, and a new one is a working shell again.
	w.send("exit\r")
	<-w.done
	w.mu.Lock()
	news := strings.Join(w.news, "\n")
	w.mu.Unlock()
	if !strings.Contains(news, `"t":"exit"`) {
		t.Errorf("after exit the terminal did not say the shell ended: %s", news)
	}
	w = openTerminal(t, abuser)
	defer w.c.CloseNow()
	_, at = w.until(0, regexp.MustCompile(`learner@rdmalab-guest`))
	w.send("cat /sys/fs/cgroup/learner/pids.current; echo new-$((7*7))\r")
	fresh, _ := w.until(at, regexp.MustCompile(`(?s)[0-9]+\r\nnew-49`))
	t.Logf("a new shell after exit: %q", fresh)

	// The host: memory bounded, the learner's QEMU niced below the
	// experiment guest's.
	if rss := procStatus(t, srv.Pid, "VmRSS"); rss > 512<<10 {
		t.Errorf("labserver resident %d MiB", rss>>10)
	}
	qemus := children(srv.Pid, "qemu-system")
	// Niceness is inherited: under `nice make test` labserver and the
	// experiment guest start above 0. The learners' QEMUs are set to 10
	// (an absolute value), so the comparison holds only below it.
	base := nice(t, srv.Pid)
	niced := 0
	for _, q := range qemus {
		rss := procStatus(t, q, "VmRSS")
		t.Logf("QEMU %d: %d MiB resident, nice %d", q, rss>>10, nice(t, q))
		// Guest RAM (-m 256) + TCG's translation cache (at most 1 GiB,
		// QEMU's default tb-size) + QEMU itself.
		if rss > (256+1024+128)<<10 {
			t.Errorf("QEMU %d resident %d MiB: more than its 256 MiB guest, its translation cache and QEMU", q, rss>>10)
		}
		if n := nice(t, q); n == 10 && n != base {
			niced++
		}
	}
	// The experiment guest at labserver's own niceness; the learner's
	// guest and the spare learner guest kept ahead of demand at 10.
	switch {
	case base >= 10:
		t.Logf("labserver itself runs at nice %d: the learners' QEMUs (nice 10) cannot be told from the experiment guest", base)
	case len(qemus)-niced != 1 || niced < 1:
		t.Errorf("%d QEMUs, %d of them at nice 10: want one experiment guest at labserver's nice %d, the learners' at 10", len(qemus), niced, base)
	}
	w.c.Close(websocket.StatusNormalClosure, "")
	other.must("GET", "/healthz", "", 200)
}
