package lessonprograms

import (
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/zhcheck"
	"github.com/rdmalab/rdmalab/lessons"
)

// checkPeerZh: the report a real peer printed in the guest reads in
// Chinese, line by line, as a zh page shows it (p.PeerReport, from the
// lesson's peers/NAME.zh.yaml): no line left as printed, no English
// prose, Chinese punctuation. lessons' TestBuiltinPeerReportsZh feeds the
// lines the peers' printf formats make; this sees what they printed.
func checkPeerZh(t *testing.T, p *lessons.Program, rep string) {
	t.Helper()
	if rep == "" {
		return
	}
	zh := strings.Split(p.PeerReport(rep)["zh"], "\n")
	for i, line := range strings.Split(rep, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		switch {
		case zh[i] == line:
			t.Errorf("%s: the peer's %q has no Chinese in %s", p.ID, line, lessons.PeerReportFile(p.Config.Peer))
		case len(zhcheck.Prose(zh[i])) > 0 || len(zhcheck.Leaks(zh[i])) > 0:
			t.Errorf("%s: the peer's %q reads %q in Chinese: %q %q", p.ID, line, zh[i], zhcheck.Prose(zh[i]), zhcheck.Leaks(zh[i]))
		}
	}
}
