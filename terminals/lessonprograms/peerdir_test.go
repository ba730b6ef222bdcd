package lessonprograms

import (
	"context"
	"github.com/rdmalab/rdmalab/terminals/terminal"
	"testing"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/machines/vm"
	"github.com/rdmalab/rdmalab/machines/vm/vmtest"
)

// staleProbe is a program run without a peer that looks for what the
// run before it had its peer publish: exit 3 if the WRITE target's
// address file is still there.
const staleProbe = `#include <unistd.h>
#include <stdio.h>
int main(void){ int stale = access("/run/lab-peer/target", F_OK) == 0; printf("stale: %s\n", stale ? "yes" : "no"); return stale ? 3 : 0; }
`

// TestPeerFolderClearedEachRun: a program run without a peer starts
// without the last run's /run/lab-peer (guestterm's resetPeerDir), so it
// cannot read what an earlier run's peer published: after lesson 04's
// WRITE exercise with its peer, a run without one neither finds the
// target file nor leaves the folder there for the check.
func TestPeerFolderClearedEachRun(t *testing.T) {
	course, err := lessons.Load(lessons.Builtin, lessons.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var p *lessons.Program
	for _, lp := range course.Lesson("04-first-program").Programs {
		if lp.Config.Peer == "peers/write-target.c" {
			p = lp
		}
	}
	if p == nil {
		t.Fatal("lesson 04 has no program with peers/write-target.c")
	}
	cfg := testConfig(t)
	cfg.Dir = vmtest.OwnCache(t)
	cfg.Accel = vm.AccelTCG
	terms := &terminal.Terminals{Cfg: cfg, Max: 1, Spares: -1}
	defer terms.Close()
	ctx := context.Background()
	a, err := terms.Attach(ctx, "learner-stale", 24, 80)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Detach()

	c := &vmtest.Events{}
	end, err := terms.RunProgram(ctx, "learner-stale", p.Request(p.Solution), "en", c.Emit)
	if err != nil || !end.Passed {
		t.Fatalf("%s's solution with its peer: passed %v, err %v, stage %s: %s\npeer: %s\ncheck: %s", p.ID, end.Passed, err, end.Stage, end.Detail, c.Text("peer"), end.Check)
	}
	alone := *p
	alone.Peer, alone.Config.Peer, alone.Config.PeerArgs = nil, "", nil
	alone.Check = []byte("#!/bin/sh\ntest \"$LAB_EXIT\" = 0 || { echo \"the program found the last run's peer folder\"; exit 1; }\n" +
		"! test -e /run/lab-peer || { echo '/run/lab-peer is still there'; exit 1; }\n")
	c = &vmtest.Events{}
	end, err = terms.RunProgram(ctx, "learner-stale", alone.Request([]byte(staleProbe)), "en", c.Emit)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("without a peer: stage %s exit %d passed %v (%s)\nstdout: %s\ncheck: %s", end.Stage, end.Exit, end.Passed, end.Detail, c.Text("stdout"), end.Check)
	if !end.Passed {
		t.Errorf("a run without a peer after one with: exit %d, check %q; want the last run's /run/lab-peer gone", end.Exit, end.Check)
	}
}
