package terminal

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/attackcost"
	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/machines/vm"
	"github.com/rdmalab/rdmalab/machines/vm/vmtest"
	"github.com/rdmalab/rdmalab/sandbox"
)

// evilPeer is what the learner tries to have root run in place of the
// lab's peer: it leaves a mark only root can leave.
const evilPeer = `#include <stdio.h>
#include <stdlib.h>
int main(void){ FILE *f = fopen("/etc/rdmalab-pwned", "w"); if (f) { fputs("root ran the learner's peer\n", f); fclose(f); } return 0; }
`

// swapperSrc is the learner's loop: in every folder of the peer's it can
// write, it renames its own peer.c and its own binary over root's (the
// folders of each run under /run/rdmalab-peer it cannot even list). Only
// headers the guest's compiler has (vmimage.CompilerHeaders).
const swapperSrc = `#include <stdlib.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
static char src[4096], bin[1 << 20];
static int nsrc, nbin;
static void put(const char *dir, const char *name, const char *buf, int n, int mode) {
	char tmp[512], dst[512];
	snprintf(tmp, sizeof tmp, "%s/.%s", dir, name);
	snprintf(dst, sizeof dst, "%s/%s", dir, name);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, mode);
	if (fd < 0) return;
	write(fd, buf, n);
	close(fd);
	rename(tmp, dst);
}
static void slurp(const char *path, char *buf, int max, int *n) {
	int fd = open(path, O_RDONLY);
	if (fd >= 0) { *n = read(fd, buf, max); close(fd); }
}
int main(void) {
	char home[256], p[512];
	snprintf(home, sizeof home, "%s", getenv("HOME"));
	snprintf(p, sizeof p, "%s/evil.c", home); slurp(p, src, sizeof src, &nsrc);
	snprintf(p, sizeof p, "%s/evil", home); slurp(p, bin, sizeof bin, &nbin);
	for (;;) {
		const char *dirs[] = {"/run/lab-peer-src", "/run/rdmalab-peer", "/run/lab-peer"};
		mkdir("/run/lab-peer-src", 0755);
		for (int i = 0; i < 3; i++) {
			put(dirs[i], "peer.c", src, nsrc, 0644);
			put(dirs[i], "peer", bin, nbin, 0755);
		}
	}
}
`

// TestPeerFolderRace replays issue 43 fall 1 in a real learner guest: the
// learner (uid 1000 in their shell) pre-creates the lab peer's folders
// with a 6,000-deep folder chain, so that root's cleanup fails, and loops
// swapping their own peer.c into every folder the peer might be built
// in. Each program run with a peer must then either refuse with the
// reason (in a line, not the chain's path) or run the lab's peer; root
// never runs the learner's source (the mark it would leave in /etc stays
// absent). Afterwards the guest's other bounds of the fall hold (/run is
// root's, root follows no learner's link in a sticky folder, no user
// namespace for the learner), and the exercise passes: the chain the
// agent could not remove was moved out of the way, into root's folder.
func TestPeerFolderRace(t *testing.T) {
	course, err := lessons.Load(lessons.Builtin, lessons.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var p *lessons.Program
	for _, lp := range course.Lesson("04-first-program").Programs {
		if len(lp.Peer) > 0 {
			p = lp
			break
		}
	}
	if p == nil {
		t.Fatal("lesson 04 has no program with a peer")
	}
	cfg := testConfig(t)
	cfg.Dir = vmtest.OwnCache(t)
	cfg.Accel = vm.AccelTCG
	var logs *attackcost.LogCounter
	cfg.Logger, logs = countedLogger(t)
	// Idle: the learner's chains and the swapper starve the guest, and
	// under load (stress-ng beside make test) a chain ran past the
	// default 10 minutes without a keystroke, so the machine was
	// reclaimed as idle mid-test. Idle reclaim has its own tests.
	terms := &Terminals{Cfg: cfg, Max: 1, Spares: -1, Idle: time.Hour}
	defer terms.Close()
	cost := attackcost.WatchSelf(logs.Len)
	ctx := context.Background()
	a, err := terms.Attach(ctx, "learner-race", 24, 200)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Detach()
	sh := func(cmd, marker string) string {
		t.Helper()
		if err := a.Write([]byte(cmd + "; echo " + marker + "-$((40+2))\n")); err != nil {
			t.Fatal(err)
		}
		return readUntil(t, a, marker+"-42")
	}
	sh("id -u; cat > ~/evil.c <<'EOF'\n"+evilPeer+"EOF\n"+
		// The chain: three mkdir -p of 2,000 levels each (one path stays
		// under PATH_MAX), in every folder of the peer's the learner can
		// create or enter.
		`deep() { ( cd "$1" 2>/dev/null || exit; printf -v p 'd/%.0s' {1..2000}; for i in 1 2 3; do mkdir -p "$p" && cd "$p" || exit; done; echo "deep: $1" ); }`, "evil")
	chain := func() {
		t.Helper()
		out := sh(`mkdir /run/lab-peer /run/lab-peer-src /run/rdmalab-peer 2>&1; for d in /run/lab-peer /run/lab-peer-src /run/rdmalab-peer; do deep $d; done; `+
			`ls -ld /run /run/lab-peer /run/lab-peer-src /run/rdmalab-peer 2>&1`, "chain")
		t.Logf("the learner's chain:\n%s", out)
	}
	// The swapper tries every folder the peer might be built in, as fast
	// as it can (a C loop, no process per try: a shell loop is too slow
	// under TCG): it re-creates the old fixed folder the moment root
	// removes it, and renames its own peer.c and its own compiled peer
	// over root's.
	// No tabs: the interactive shell would complete on them.
	out := sh("cat > ~/swap.c <<'EOF'\n"+strings.ReplaceAll(swapperSrc, "\t", "  ")+"EOF\n"+
		"tcc -o ~/swap ~/swap.c && tcc -o ~/evil ~/evil.c && echo built-$((5*5))", "swap")
	if !strings.Contains(out, "built-25") {
		t.Fatalf("the learner's swapper did not build:\n%s", out)
	}
	swapper := `~/swap >/dev/null 2>&1 & swapper=$!`
	refused := 0
	runs := 0
	race := func() {
		t.Helper()
		for range 2 {
			c := &vmtest.Events{}
			end, err := terms.RunProgram(ctx, "learner-race", p.Request(p.Solution), "en", c.Emit)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("run %d during the race: stage %s passed %v: %s\npeer: %s\ncheck: %s", runs, end.Stage, end.Passed, end.Detail, c.Text("peer"), end.Check)
			switch {
			case end.Stage == "peer" && strings.Contains(end.Detail, "could not be emptied") && len(end.Detail) < 400:
				refused++
			case end.Stage == "check" && end.Passed:
			default:
				t.Errorf("run %d during the race: stage %s passed %v (%s); want refused with the reason, or the lab's peer and a pass", runs, end.Stage, end.Passed, end.Detail)
			}
			runs++
		}
	}
	// On a fresh machine, as the attack did; then again once the
	// lab's runs have made the peer's folders.
	chain()
	sh(swapper, "loop")
	race()
	chain()
	race()
	out = sh(`kill $swapper; wait $swapper 2>/dev/null; if [ -e /etc/rdmalab-pwned ]; then echo ROOT-RAN-$((1+1)); else echo no-mark-$((2+3)); fi; `+
		`stat -c '%n %a %U' /run /run/rdmalab-peer 2>&1; cat /proc/sys/fs/protected_symlinks /proc/sys/fs/protected_regular; `+
		`unshare -U true 2>/dev/null && echo USERNS-$((7*7)) || echo nouserns-$((6*6))`, "after")
	t.Logf("after the race (%d/%d runs refused):\n%s", refused, runs, out)
	cost.Stop().Check(t, "fall 1 peer deep-folder race (in-process terminals, real guest)")
	if strings.Contains(out, "ROOT-RAN-2") || !strings.Contains(out, "no-mark-5") {
		t.Errorf("root ran the learner's peer.c:\n%s", out)
	}
	for _, want := range []string{"/run 755 root", "\r\n1\r\n2\r\n", "nouserns-36"} {
		if !strings.Contains(out, want) {
			t.Errorf("after the race the guest lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "/run/rdmalab-peer 700 root") {
		t.Errorf("/run/rdmalab-peer is not root's own 0700 folder:\n%s", out)
	}
	// The chain is out of the way: the exercise runs again.
	end, err := terms.RunProgram(ctx, "learner-race", p.Request(p.Solution), "en", func(sandbox.Event) {})
	if err != nil || !end.Passed {
		t.Errorf("the solution after the race: %v, stage %s passed %v: %s %s", err, end.Stage, end.Passed, end.Detail, end.Check)
	}
}
