package capture

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/ibt"
)

// The golden captures in testdata were taken in the lab's Soft-RoCE guest
// by wire-capture (go test ./sandbox/rdmaexp -run TestWireCapture
// -update-golden): real rxe packets, ICRC included.
var golden = map[string][]string{
	"write":      {"RDMA WRITE First", "RDMA WRITE Middle", "RDMA WRITE Last", "Acknowledge"},
	"send":       {"SEND Only", "Acknowledge"},
	"read":       {"RDMA READ Request", "RDMA READ Response First", "RDMA READ Response Last"},
	"no-recv":    {"SEND Only", "Acknowledge"}, // then retries: how many depends on timing (an RNR retry, maybe a timeout retry)
	"wrong-rkey": {"RDMA WRITE Only", "Acknowledge"},
}

func readGolden(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "rxe-"+name+".pcap"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ops(ps []Packet) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.OpName)
	}
	return out
}

func TestDecodeGolden(t *testing.T) {
	for name, want := range golden {
		t.Run(name, func(t *testing.T) {
			ps, err := Decode(readGolden(t, name), nil)
			if err != nil {
				t.Fatal(err)
			}
			got := ops(ps)
			if name == "no-recv" && len(got) > len(want) {
				got = got[:len(want)]
			}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("opcodes %v, want %v", got, want)
			}
			for _, p := range ps {
				if p.Error != "" || p.ICRCOK == nil || !*p.ICRCOK {
					t.Errorf("packet %d (%s): error %q, ICRC ok %v", p.No, p.Summary, p.Error, p.ICRCOK)
				}
				if len(p.Hex) != 2*p.CapLen {
					t.Errorf("packet %d: hex of %d chars for %d bytes", p.No, len(p.Hex), p.CapLen)
				}
				for _, f := range p.Fields {
					if f.Off < 0 || f.Off+f.Len > p.CapLen {
						t.Errorf("packet %d: field %s.%s at %d+%d outside the frame", p.No, f.Header, f.Name, f.Off, f.Len)
					}
				}
			}
		})
	}
}

// TestGoldenSemantics checks what the lesson teaches on the real packets.
func TestGoldenSemantics(t *testing.T) {
	w, _ := Decode(readGolden(t, "write"), nil)
	if w[1].PSN != w[0].PSN+1 || w[2].PSN != w[1].PSN+1 {
		t.Errorf("WRITE PSNs %d %d %d not consecutive", w[0].PSN, w[1].PSN, w[2].PSN)
	}
	if w[0].IB.RETH == nil || w[1].IB.RETH != nil || w[2].IB.RETH != nil {
		t.Error("only WRITE First carries a RETH")
	}
	if w[0].IB.RETH.DMALen != uint32(3*w[0].PayloadLen) || !w[2].AckReq || w[0].AckReq {
		t.Errorf("First: RETH length %d for payload %d, AckReq first %v last %v", w[0].IB.RETH.DMALen, w[0].PayloadLen, w[0].AckReq, w[2].AckReq)
	}
	if w[3].IB.AETH == nil || w[3].IB.AETH.Syndrome.Kind() != ibt.KindACK || w[3].PSN != w[2].PSN {
		t.Errorf("ACK %+v", w[3].IB.AETH)
	}
	r, _ := Decode(readGolden(t, "no-recv"), nil)
	if s := r[1].IB.AETH.Syndrome; s.Kind() != ibt.KindRNRNAK {
		t.Errorf("no-recv: syndrome %v, want an RNR NAK", s)
	}
	k, _ := Decode(readGolden(t, "wrong-rkey"), nil)
	if s := k[1].IB.AETH.Syndrome; s.Kind() != ibt.KindNAK || s.Value() != ibt.NAKRemoteAccess {
		t.Errorf("wrong-rkey: syndrome %v, want NAK remote access error", s)
	}
	d, _ := Decode(readGolden(t, "drop"), nil)
	seq, seen, again := false, map[uint32]bool{}, 0
	for _, p := range d {
		if p.IB.AETH != nil && p.IB.AETH.Syndrome.Kind() == ibt.KindNAK && p.IB.AETH.Syndrome.Value() == ibt.NAKPSNSequenceError {
			seq = true
		}
		if ibt.Opcode(p.Opcode).IsRequest() {
			if seen[p.PSN] {
				again++
			}
			seen[p.PSN] = true
		}
	}
	if !seq || again == 0 {
		t.Errorf("drop: PSN sequence NAK %v, retransmitted %d; ops %v", seq, again, ops(d))
	}
}

// TestPcapRoundTrip writes frames with Result.Pcap and reads them back;
// tshark (Debian package tshark) must read the same number of packets.
func TestPcapRoundTrip(t *testing.T) {
	frames, err := ReadPcap(readGolden(t, "write"))
	if err != nil {
		t.Fatal(err)
	}
	res := Result{Iface: "veth1", Frames: frames, Snap: DefaultSnap}
	data, err := res.Pcap()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ReadPcap(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != len(frames) {
		t.Fatalf("%d frames back, wrote %d", len(back), len(frames))
	}
	for i := range frames {
		if !bytes.Equal(back[i].Data, frames[i].Data) || !back[i].Time.Equal(frames[i].Time) {
			t.Errorf("frame %d changed in the round trip", i)
		}
	}
	ev, err := res.Event(map[string]sandbox.Text{"10.0.0.2": {"en": "rxe1 (requester)", "zh": "rxe1（请求方）"}})
	if err != nil || ev.Capture == nil || ev.Capture.Packets != len(frames) || !bytes.Equal(ev.Capture.Pcap, data) {
		t.Fatalf("event %+v, %v", ev, err)
	}
	if en, zh := ev.Capture.HostsIn("en")["10.0.0.2"], ev.Capture.HostsIn("zh")["10.0.0.2"]; en != "rxe1 (requester)" || zh != "rxe1（请求方）" {
		t.Errorf("host names en %q, zh %q", en, zh)
	}
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Fatal("tshark is not installed (Debian package tshark; `make deps-test` installs it)")
	}
	file := filepath.Join(t.TempDir(), "x.pcap")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tshark, "-r", file, "-T", "fields", "-e", "infiniband.bth.psn").Output()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Fields(string(out))); n != len(frames) {
		t.Errorf("tshark read %d packets with a BTH, want %d", n, len(frames))
	}
}

func TestLimits(t *testing.T) {
	frames, _ := ReadPcap(readGolden(t, "write"))
	c := &Capture{lim: Limits{Packets: 2}.norm(), done: make(chan struct{})}
	for _, f := range frames {
		c.add(f.Data, f.Time, f.Len)
	}
	if len(c.frames) != 2 || c.dropped != len(frames)-2 || c.seen != len(frames) {
		t.Errorf("kept %d, dropped %d, seen %d", len(c.frames), c.dropped, c.seen)
	}
	c = &Capture{lim: Limits{Bytes: len(frames[0].Data) + 10}.norm(), done: make(chan struct{})}
	for _, f := range frames {
		c.add(f.Data, time.Now(), f.Len)
	}
	if len(c.frames) != 1 {
		t.Errorf("byte limit kept %d frames", len(c.frames))
	}
}

func TestQPFilter(t *testing.T) {
	frames, _ := ReadPcap(readGolden(t, "write"))
	ps, _ := Decode(readGolden(t, "write"), nil)
	req, rsp := ps[0], ps[3] // WRITE First (to the responder's QP), ACK (to the requester's)
	keep := QPFilter(QP{IP: parseIP(req.Dst), QPN: req.DestQP}, QP{IP: parseIP(rsp.Dst), QPN: rsp.DestQP})
	for i, f := range frames {
		if !keep(f.Data) {
			t.Errorf("frame %d of the pair not kept", i)
		}
	}
	other := QPFilter(QP{IP: parseIP(req.Dst), QPN: req.DestQP + 1})
	if other(frames[0].Data) {
		t.Error("a frame for another QP was kept")
	}
	wrongHost := QPFilter(QP{IP: parseIP(req.Src), QPN: req.DestQP})
	if wrongHost(frames[0].Data) {
		t.Error("a frame to the same QP number on another host was kept")
	}
	if IsRoCEv2(frames[0].Data[:20]) {
		t.Error("a cut frame is RoCEv2")
	}
}

// FuzzDecodeFrame: no frame makes the decoder panic or name bytes it does
// not have.
func FuzzDecodeFrame(f *testing.F) {
	for name := range golden {
		frames, _ := ReadPcap(readGolden(f, name))
		for _, fr := range frames {
			f.Add(fr.Data)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p := DecodeFrame(b, nil)
		for _, fl := range p.Fields {
			if fl.Off < 0 || fl.Off+fl.Len > len(b) {
				t.Fatalf("field %s.%s at %d+%d outside %d bytes", fl.Header, fl.Name, fl.Off, fl.Len, len(b))
			}
		}
	})
}

func parseIP(s string) net.IP { return net.ParseIP(s) }

// TestTruncatedFrame: a frame cut by the snap length is marked truncated
// with its length on the wire, its payload length comes from the UDP
// header, and no ICRC is shown or judged (issue 30: a 128-byte snap of a
// 1098-byte WRITE read "payload 54" and "ICRC wrong").
func TestTruncatedFrame(t *testing.T) {
	frames, err := ReadPcap(readGolden(t, "write"))
	if err != nil {
		t.Fatal(err)
	}
	full := frames[0].Data // RDMA WRITE First, a whole MTU of payload
	whole := DecodeFrame(full, nil)
	if whole.ICRCOK == nil || whole.PayloadLen < 512 {
		t.Fatalf("the golden WRITE First: payload %d, ICRC ok %v", whole.PayloadLen, whole.ICRCOK)
	}
	cut := full[:128]
	var r Result
	r.Frames = []Frame{{Time: frames[0].Time, Data: cut, Len: len(full)}}
	r.Snap = 128
	pcap, err := r.Pcap()
	if err != nil {
		t.Fatal(err)
	}
	ps, err := Decode(pcap, nil)
	if err != nil || len(ps) != 1 {
		t.Fatalf("decode: %v, %d packets", err, len(ps))
	}
	p := ps[0]
	if !p.Truncated || p.CapLen != 128 || p.Len != len(full) {
		t.Errorf("truncated %v, caplen %d, len %d; want true, 128, %d", p.Truncated, p.CapLen, p.Len, len(full))
	}
	if p.PayloadLen != whole.PayloadLen {
		t.Errorf("payload %d, want %d (from the UDP length, not the bytes captured)", p.PayloadLen, whole.PayloadLen)
	}
	if p.ICRCOK != nil || p.ICRCWant != "" {
		t.Errorf("ICRC judged on a cut frame: ok %v, expected %q", p.ICRCOK, p.ICRCWant)
	}
	for _, f := range p.Fields {
		if f.Header == "ICRC" || f.Off+f.Len > 128 {
			t.Errorf("field %s.%s at %d+%d beyond the 128 bytes captured", f.Header, f.Name, f.Off, f.Len)
		}
		if f.Header == "Payload" && !strings.Contains(f.Text, "captured") {
			t.Errorf("cut payload field reads %q", f.Text)
		}
	}
}

// TestHeadKeepsFramesCut: with Head set, frames are kept whole while the
// byte bound leaves room for every later packet's headers, then cut to
// Head — none dropped, the bound held.
func TestHeadKeepsFramesCut(t *testing.T) {
	c := &Capture{lim: Limits{Packets: 10, Bytes: 4000, Snap: 2048, Head: 100}.norm()}
	frame := bytes.Repeat([]byte{1}, 1000)
	for range 10 {
		c.add(frame, time.Now(), len(frame))
	}
	whole, cut := 0, 0
	for _, f := range c.frames {
		switch len(f.Data) {
		case 1000:
			whole++
		case 100:
			cut++
		}
		if f.Len != 1000 {
			t.Errorf("wire length %d, want 1000", f.Len)
		}
	}
	if c.dropped != 0 || whole+cut != 10 || whole < 2 || c.bytes > 4000 {
		t.Errorf("%d whole, %d cut, %d dropped, %d bytes; want all 10 kept, the first whole, ≤ 4000 bytes", whole, cut, c.dropped, c.bytes)
	}
}
