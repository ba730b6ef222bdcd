package faults

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/rdmalab/rdmalab/internal/attackcost"
	"github.com/rdmalab/rdmalab/internal/labproc"
	"github.com/rdmalab/rdmalab/lessons"
)

// fromAddr is a transport that says, as the lab's reverse proxy would,
// which address a learner's requests come from (X-Real-IP, trusted from
// loopback with --trusted-proxy-header).
type fromAddr struct{ addr string }

func (f fromAddr) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Real-IP", f.addr)
	return http.DefaultTransport.RoundTrip(r)
}

// learnerAt is a new learner whose requests come from addr.
func learnerAt(t *testing.T, base, addr string) *learner {
	l := newLearner(t, base)
	l.c.Transport = fromAddr{addr}
	l.must("GET", "/?lang=en", "", 200)
	return l
}

// guestImage is a folder with the learner guest's image for a lab of
// this test's own: a copy of $LAB_TEST_IMAGE_DIR when there is one (the
// shared cache is never a lab's folder: the lab writes its snapshots
// there), else built by `labserver vm build`, as TestTerminalAbuse does.
func guestImage(t *testing.T, bin string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "vm")
	if src := os.Getenv("LAB_TEST_IMAGE_DIR"); src != "" {
		if out, err := exec.Command("cp", "-a", src, dir).CombinedOutput(); err != nil {
			t.Fatalf("copy the guest image: %v\n%s", err, out)
		}
	}
	if out, err := exec.Command(bin, "vm", "build", "--dir", dir).CombinedOutput(); err != nil {
		t.Fatalf("labserver vm build: %v\n%s", err, out)
	}
	return dir
}

// TestProgramRunsShareTerminalBoundsRealServer is issue 43, fall 3, as the
// attack met bin/labserver with real learner guests (web's
// TestProgramRunsShareTerminalBounds checks the admission in-process with
// stand-in terminals): six cookies of one address each start a program
// run at once — before, each attached a machine past the per-address
// share, and with the queue full an honest learner elsewhere was told so.
// Now the address's first run gets the machine and the other five are
// refused 429; the honest learner on another address opens a terminal,
// gets a shell and runs a command in it; labserver stays under
// attackcost's bounds throughout.
func TestProgramRunsShareTerminalBoundsRealServer(t *testing.T) {
	bin := labserver(t)
	vmDir := guestImage(t, bin)
	srv := start(t, labproc.Options{Env: []string{"LAB_BACKEND=vm", "LAB_VM_DIR=" + vmDir,
		"LAB_GUESTS=1", "LAB_TERMINALS=2", "LAB_VM_MEMORY=256"},
		Args: []string{"--trusted-proxy-header", "X-Real-IP"}})
	course, err := lessons.Load(lessons.Builtin, lessons.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := course.Lesson("04-first-program").Programs[0]
	src, _ := json.Marshal(map[string]string{"source": string(p.Solution)})
	body := string(src)
	const attacker, victim = "203.0.113.9", "198.51.100.7"
	cookies := make([]*learner, 6)
	for i := range cookies {
		cookies[i] = learnerAt(t, srv.URL, attacker)
	}
	honest := learnerAt(t, srv.URL, victim)

	m := attackcost.Watch(srv.Pid, srv.LogBytes)
	codes := make([]int, len(cookies))
	var wg sync.WaitGroup
	for i, c := range cookies {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", srv.URL+"/api/lessons/04-first-program/programs/"+p.ID+"/run", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Origin", srv.URL)
			res, err := c.c.Do(req)
			if err != nil {
				t.Errorf("cookie %d's run: %v", i, err)
				return
			}
			res.Body.Close()
			codes[i] = res.StatusCode
		})
	}
	wg.Wait()
	t.Logf("six cookies of one address running programs: %v", codes)
	// The honest learner, while the address's run holds its machine.
	w := openTerminal(t, honest)
	defer w.c.CloseNow()
	_, at := w.until(0, regexp.MustCompile(`learner@rdmalab-guest`))
	w.send("echo honest-$((6*7))\r")
	w.until(at, regexp.MustCompile(`honest-42`))
	cost := m.Stop()
	created, refused := 0, 0
	for _, c := range codes {
		switch c {
		case http.StatusCreated:
			created++
		case http.StatusTooManyRequests:
			refused++
		}
	}
	t.Logf("the honest learner elsewhere got a shell and ran a command in it")
	cost.Check(t, "fall 3 program runs past the terminal bound (real labserver, real guests)")
	if created != 1 || refused != 5 {
		t.Errorf("the address's six runs: %d started, %d refused 429 (%v); want 1 and 5", created, refused, codes)
	}
}
