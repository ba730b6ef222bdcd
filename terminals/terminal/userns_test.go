package terminal

import (
	"context"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/attackcost"
)

// TestLearnerHasNoUserNamespace (issue 43): a learner's shell (uid 1000)
// cannot make a user namespace, the way into capabilities inside one
// (mounts, raw sockets, the kernel surface behind CAP_SYS_ADMIN) that no
// lesson needs: the guest's /init turns Debian's switch off
// (machines/vmguest/initscript). unshare is in the image, so a guest that
// allowed it would print rc=0.
func TestLearnerHasNoUserNamespace(t *testing.T) {
	cfg := testConfig(t)
	var logs *attackcost.LogCounter
	cfg.Logger, logs = countedLogger(t)
	terms := &Terminals{Cfg: cfg, Max: 1, Spares: -1}
	defer terms.Close()
	cost := attackcost.WatchSelf(logs.Len)
	a, err := terms.Attach(context.Background(), "learner-userns", 24, 200)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Detach()
	if err := a.Write([]byte("id -u; command -v unshare; cat /proc/sys/kernel/unprivileged_userns_clone; unshare -U true; echo rc=$?; echo done-$((40+2))\n")); err != nil {
		t.Fatal(err)
	}
	out := readUntil(t, a, "done-42")
	cost.Stop().Check(t, "fall 10 user namespace (in-process terminals, real guest)")
	t.Logf("the learner's shell:\n%s", out)
	for _, want := range []string{"1000\r\n", "/unshare\r\n", "\r\n0\r\n", "Operation not permitted", "rc=1"} {
		if !strings.Contains(out, want) {
			t.Errorf("the learner's shell lacks %q: a user namespace may be open to them", want)
		}
	}
}
