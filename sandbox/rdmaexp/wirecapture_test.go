package rdmaexp

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
	wirecap "github.com/rdmalab/rdmalab/sandbox/capture"
	"github.com/rdmalab/rdmalab/sandbox/ibt"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
)

var updateGolden = flag.Bool("update-golden", false, "write the captures of TestWireCapture to ../capture/testdata as golden pcaps")

// TestWireCapture runs every operation of wire-capture on real Soft-RoCE
// devices (here or in the guest) and checks the packets it must show; each
// .pcap must open in tshark with the same packet count.
func TestWireCapture(t *testing.T) {
	ex := pickExecutor(t)
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Fatal("tshark is not installed (Debian package tshark; `make deps-test` installs it)")
	}
	for _, op := range []string{wireWrite, wireSend, wireRead, wireRNR, wireRKey, wireDrop} {
		t.Run(op, func(t *testing.T) {
			rec := ex.run(t, "wire-capture", map[string]any{"op": op})
			r := rec.result(t)
			if n := len(rec.evs); n > 1 {
				t.Logf("the run's events span %s", rec.evs[n-1].Time.Sub(rec.evs[0].Time).Round(time.Millisecond))
			}
			caps := rec.of(sandbox.EvCapture)
			if len(caps) != 1 || caps[0].Capture == nil || len(caps[0].Capture.Pcap) == 0 {
				rec.dump(t)
				t.Fatalf("want one capture event with a pcap, got %d", len(caps))
			}
			c := caps[0].Capture
			ps, err := wirecap.Decode(c.Pcap, c.Hosts)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range ps {
				t.Logf("%2d %8.3f ms %-22s → %-22s %s", p.No, p.Time*1000, p.SrcName, p.DstName, p.Summary)
				if p.Error != "" {
					t.Errorf("packet %d: %s", p.No, p.Error)
				}
				if p.ICRCOK == nil || !*p.ICRCOK {
					t.Errorf("packet %d: ICRC not verified correct (%v)", p.No, p.ICRCOK)
				}
			}
			if r.OK == nil || !*r.OK {
				rec.dump(t)
				t.Fatalf("verdict not ok: %s", r.Message)
			}
			if len(ps) != c.Packets || len(ps) != int(r.Figures["packets"]) {
				t.Errorf("decoded %d packets, the event says %d, the figures %v", len(ps), c.Packets, r.Figures["packets"])
			}
			switch op {
			case wireWrite:
				var ops []string
				var psns []uint32
				for _, p := range ps {
					if ibt.Opcode(p.Opcode).IsRequest() {
						ops = append(ops, p.OpName)
						psns = append(psns, p.PSN)
					}
				}
				if strings.Join(ops, ",") != "RDMA WRITE First,RDMA WRITE Middle,RDMA WRITE Last" ||
					psns[1] != psns[0]+1 || psns[2] != psns[1]+1 {
					t.Errorf("three-MTU WRITE: requests %v PSNs %v; want First/Middle/Last with consecutive PSNs", ops, psns)
				}
			case wireRNR:
				found := false
				for _, p := range ps {
					if p.IB != nil && p.IB.AETH != nil && p.IB.AETH.Syndrome.Kind() == ibt.KindRNRNAK {
						found = true
					}
				}
				if !found {
					t.Error("no NAK with the RNR syndrome in the capture")
				}
			case wireRKey:
				if r.Figures["access_naks"] < 1 {
					t.Errorf("no remote access NAK: %v", r.Figures)
				}
			case wireDrop:
				if r.Figures["psn_seq_naks"] < 1 || r.Figures["retransmitted"] < 1 {
					t.Errorf("drop: %v; want a PSN sequence NAK and a retransmission", r.Figures)
				}
			}
			dir := t.TempDir()
			if *updateGolden {
				dir = filepath.Join("..", "capture", "testdata")
			}
			file := filepath.Join(dir, "rxe-"+op+".pcap")
			if err := os.WriteFile(file, c.Pcap, 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(tshark, "-r", file, "-T", "fields", "-e", "frame.number").Output()
			if err != nil {
				t.Fatalf("tshark -r %s: %v", file, err)
			}
			if n := len(strings.Fields(string(out))); n != len(ps) {
				t.Errorf("tshark reads %d packets, we decoded %d", n, len(ps))
			}
			// Wireshark's own InfiniBand dissector agrees on the opcodes.
			out, err = exec.Command(tshark, "-r", file, "-T", "fields", "-e", "infiniband.bth.opcode").Output()
			if err != nil {
				t.Fatalf("tshark opcodes: %v", err)
			}
			got := strings.Fields(string(out))
			for i, p := range ps {
				if i < len(got) && got[i] != strconv.Itoa(int(p.Opcode)) {
					t.Errorf("packet %d: tshark says opcode %s, we say %d", p.No, got[i], p.Opcode)
				}
			}
		})
	}
}

// TestDiagnose runs the three broken runs and checks that each shows its
// symptom: the completion status, and for the lossy link success with
// sequence-error counters moving.
func TestDiagnose(t *testing.T) {
	ex := pickExecutor(t)
	rec := ex.run(t, "diagnose", map[string]any{"case": "all"})
	r := rec.result(t)
	t.Logf("the run's events span %s", rec.evs[len(rec.evs)-1].Time.Sub(rec.evs[0].Time).Round(time.Millisecond))
	f := r.Figures
	for _, tb := range rec.of(sandbox.EvTable) {
		t.Logf("%s: %v", tb.Table.Title, tb.Table.Rows)
	}
	if r.OK == nil || !*r.OK {
		t.Errorf("verdict not ok: %s", r.Message)
	}
	if f["a.status"] != float64(verbs.WCRemAccessErr) || f["b.status"] != float64(verbs.WCRNRRetryExcErr) || f["c.status"] != float64(verbs.WCSuccess) {
		t.Errorf("statuses a=%v b=%v c=%v; want REM_ACCESS_ERR, RNR_RETRY_EXC_ERR, SUCCESS", f["a.status"], f["b.status"], f["c.status"])
	}
	seq := 0.0
	for k, v := range f {
		if strings.HasPrefix(k, "c.") && (strings.Contains(k, "seq") || strings.Contains(k, "retry") || strings.Contains(k, "duplicate")) {
			seq += v
		}
	}
	if seq <= 0 {
		t.Errorf("lossy link moved no sequence or retry counter: %v", f)
	}
	if f["b.rxe0.rcvd_rnr_err"]+f["b.rxe1.rcvd_rnr_err"]+f["b.rxe0.send_rnr_err"]+f["b.rxe1.send_rnr_err"] <= 0 {
		t.Errorf("no RNR counter moved in mystery b: %v", f)
	}
}
