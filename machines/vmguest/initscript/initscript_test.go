package initscript

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/machines/vmproto"
)

// TestInitScript: /init parses as a shell script (dash here, busybox ash in
// the guest), loads the modules it is given in that order with one
// modprobe, records a failure where the agent's hello reads it, and hands
// PID 1 to the agent's guest-init with the agent's pid.
func TestInitScript(t *testing.T) {
	mods := []string{"rdma_rxe", "veth", "ib_uverbs"}
	script := Script(mods)
	path := filepath.Join(t.TempDir(), "init")
	if err := os.WriteFile(path, script, 0o755); err != nil {
		t.Fatal(err)
	}
	shells := [][]string{{"sh", "-n", path}}
	if bb, err := exec.LookPath("busybox"); err == nil {
		shells = append(shells, []string{bb, "sh", "-n", path})
	}
	for _, sh := range shells {
		if out, err := exec.Command(sh[0], sh[1:]...).CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", strings.Join(sh, " "), err, out)
		}
	}
	s := string(script)
	for _, want := range []string{
		"modprobe -a rdma_rxe veth ib_uverbs ",
		"> " + vmproto.SetupErrFile,
		": > " + vmproto.ModulesDone,
		"/usr/bin/labagent --serve " + vmproto.PortLink + " &",
		`exec /usr/bin/labagent guest-init "$agent"`,
		// Issue 43 fall 1: /run is root's, root follows no learner's link.
		"mount -t tmpfs -o mode=0755 tmpfs /run\n",
		"echo 1 > /proc/sys/fs/protected_symlinks\n",
		"echo 2 > /proc/sys/fs/protected_regular\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("/init lacks %q", want)
		}
	}
	if !strings.HasPrefix(s, "#!/bin/sh\n") {
		t.Errorf("/init starts %q", s[:min(20, len(s))])
	}
}
