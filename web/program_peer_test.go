package web

import (
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/zhcheck"
)

// TestPeerReportZh (issue 44 item 8): lesson 04's peers' reports, as they
// print them, read in Chinese on a zh page (no English prose, zh
// punctuation), the values kept; the English stays as printed.
func TestPeerReportZh(t *testing.T) {
	for _, rep := range []string{
		"peer on rxe1: rdma_cm server on 10.0.0.2 port 7471\nconnection: established\nreceived: hello, peer\nreceived bytes: 12\nreplied: pong: hello, peer\ndisconnected: yes\n",
		"peer on rxe1: QP 17, buffer of 4096 bytes, rkey 0x1a2b\nconnected: yes\nreceived: \n",
	} {
		got := peerReport(rep)
		if got["en"] != rep {
			t.Errorf("the English report changed: %q", got["en"])
		}
		zh := got["zh"]
		if p := zhcheck.Prose(zh); len(p) > 0 {
			t.Errorf("the zh report %q holds English %q", zh, p)
		}
		if l := zhcheck.Leaks(zh); len(l) > 0 {
			t.Errorf("the zh report %q leaks %q", zh, l)
		}
		for _, keep := range []string{"rxe1", "4096", "0x1a2b", "10.0.0.2", "hello, peer"} {
			if strings.Contains(rep, keep) && !strings.Contains(zh, keep) {
				t.Errorf("the zh report lost %q: %q", keep, zh)
			}
		}
	}
}
