package web

import (
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/zhcheck"
)

// TestExplainMistakes (issue 44 item 4): the failures learners make in
// lesson 04, as their programs print them, are named with their cause and
// the section that teaches it, in both languages; output that shows none
// adds nothing.
func TestExplainMistakes(t *testing.T) {
	for _, c := range []struct {
		out, want, section string
	}{
		{"WRITE completion: remote access error (status 10)\n", "remote access error", "#nak"},
		{"send: RNR retry counter exceeded\n", "no receive posted", "#rnr-retry"},
		{"poll: transport retry counter exceeded\n", "No acknowledgement", "#retry-budget"},
		{"ibv_reg_mr: Invalid argument\n", "IBV_ACCESS_LOCAL_WRITE", "#reg-mr"},
		{"ibv_reg_mr failed: Cannot allocate memory\n", "RLIMIT_MEMLOCK", "#memlock"},
		{"ibv_modify_qp(RTR): Invalid argument\n", "one step at a time", "#state-machine"},
	} {
		got := explainMistakes(c.out)
		if len(got) != 1 || !strings.Contains(got[0]["en"], c.want) || !strings.Contains(got[0]["en"], c.section) || !strings.Contains(got[0]["zh"], c.section) {
			t.Errorf("%q: %v, want one cause naming %q and %s", c.out, got, c.want, c.section)
			continue
		}
		if p, l := zhcheck.Prose(got[0]["zh"]), zhcheck.Leaks(got[0]["zh"]); len(p)+len(l) > 0 {
			t.Errorf("%q: zh %q has %q %q", c.out, got[0]["zh"], p, l)
		}
	}
	if got := explainMistakes("lkey=0x1 rkey=0x2\nconnected\n"); got != nil {
		t.Errorf("plain output explained as %v", got)
	}
	var o outputTail
	o.add(strings.Repeat("x", outputTailMax))
	o.add("remote access error")
	if explainMistakes(o.String()) != nil {
		t.Error("output past the cap was scanned")
	}
}
