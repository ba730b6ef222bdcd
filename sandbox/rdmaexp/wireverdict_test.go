package rdmaexp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	wirecap "github.com/rdmalab/rdmalab/sandbox/capture"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
)

// TestWireVerdictOnGolden reads the verdict of each operation from the
// real captures in sandbox/capture/testdata (no device needed): each says
// what it saw, and a capture that does not fit the operation is said to
// not fit — the verdict follows the measurement.
func TestWireVerdictOnGolden(t *testing.T) {
	status := map[string]verbs.WCStatus{wireWrite: verbs.WCSuccess, wireSend: verbs.WCSuccess, wireRead: verbs.WCSuccess,
		wireRNR: verbs.WCRNRRetryExcErr, wireRKey: verbs.WCRemAccessErr, wireDrop: verbs.WCSuccess}
	decode := func(op string) []wirecap.Packet {
		b, err := os.ReadFile(filepath.Join("..", "capture", "testdata", "rxe-"+op+".pcap"))
		if err != nil {
			t.Fatal(err)
		}
		ps, err := wirecap.Decode(b, nil)
		if err != nil {
			t.Fatal(err)
		}
		return ps
	}
	texts := map[string]bool{}
	for op, st := range status {
		wcs := []wireWC{{"requester", verbs.WC{Status: st}}}
		ok, v, figs := wireVerdict(op, 1024, decode(op), wcs)
		if !ok || v["en"] == "" || v["zh"] == "" || strings.Contains(v["en"], "does not show") {
			t.Errorf("%s: ok=%v %q", op, ok, v["en"])
		}
		texts[v["en"]] = true
		t.Logf("%s: %v", op, figs)
		// The same completion with another operation's capture does not fit.
		other := wireWrite
		if op == wireWrite {
			other = wireRead
		}
		if ok, v, _ := wireVerdict(op, 1024, decode(other), wcs); ok || !strings.Contains(v["en"], "does not show") {
			t.Errorf("%s judged on the %s capture: ok=%v %q", op, other, ok, v["en"])
		}
	}
	if len(texts) != len(status) {
		t.Errorf("%d different verdicts for %d operations", len(texts), len(status))
	}
}

func TestTypicalSymptom(t *testing.T) {
	fail := func(st verbs.WCStatus) []wireWC { return []wireWC{{"requester", verbs.WC{Status: st}}} }
	seq := []counterMove{{"rxe1", "rcvd_seq_err", 2}}
	cases := []struct {
		m    mystery
		s    symptom
		want bool
	}{
		{mysteries[0], symptom{wcs: fail(verbs.WCRemAccessErr)}, true},
		{mysteries[0], symptom{wcs: fail(verbs.WCSuccess)}, false},
		{mysteries[1], symptom{wcs: fail(verbs.WCRNRRetryExcErr)}, true},
		{mysteries[1], symptom{wcs: fail(verbs.WCRetryExcErr)}, false},
		{mysteries[2], symptom{wcs: fail(verbs.WCSuccess), moves: seq}, true},
		{mysteries[2], symptom{wcs: fail(verbs.WCSuccess)}, false}, // no loss happened
	}
	for i, c := range cases {
		if got := typicalSymptom(c.m, c.s); got != c.want {
			t.Errorf("case %d (%s): %v, want %v", i, c.m.id, got, c.want)
		}
	}
}
