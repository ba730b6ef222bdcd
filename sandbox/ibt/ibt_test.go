package ibt

import (
	"encoding/hex"
	"errors"
	"regexp"
	"strings"
	"testing"
)

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// field returns the named field of header h.
func field(t *testing.T, p *Packet, h, name string) Field {
	t.Helper()
	for _, f := range p.Fields {
		if f.Header == h && f.Name == name {
			return f
		}
	}
	t.Fatalf("no field %s.%s in %+v", h, name, p.Fields)
	return Field{}
}

func TestDecodeHandBuilt(t *testing.T) {
	tests := []struct {
		name  string
		hex   string
		check func(t *testing.T, p *Packet)
	}{
		{"write first", "06 00 ffff 00 000011 80 000007" + // BTH: opcode, SE/M/Pad/TVer, PKey, resv, QP 0x11, A, PSN 7
			"00007f0012345000 0000abcd 00000c00" + // RETH: VA, rkey, len 3072
			"6162636465666768" + "deadbeef", func(t *testing.T, p *Packet) {
			if p.Opcode != RCWriteFirst || p.Opcode.String() != "RC RDMA WRITE First" || p.DestQP != 0x11 || p.PSN != 7 || !p.AckReq {
				t.Errorf("BTH %+v", p)
			}
			if p.RETH == nil || p.RETH.VA != 0x7f0012345000 || p.RETH.RKey != 0xabcd || p.RETH.DMALen != 3072 {
				t.Errorf("RETH %+v", p.RETH)
			}
			if p.PayloadOff != 100+28 || p.PayloadLen != 8 || p.ICRC != 0xdeadbeef {
				t.Errorf("payload at %d len %d, ICRC %x", p.PayloadOff, p.PayloadLen, p.ICRC)
			}
			if f := field(t, p, "RETH", "R_Key"); f.Off != 100+20 || f.Len != 4 {
				t.Errorf("R_Key at %d+%d, want 120+4", f.Off, f.Len)
			}
			if f := field(t, p, "ICRC", "ICRC"); f.Off != 100+36 {
				t.Errorf("ICRC at %d", f.Off)
			}
		}},
		{"ack", "11 00 ffff 00 000022 00 000009 1f 000003 01020304", func(t *testing.T, p *Packet) {
			if p.AETH == nil || p.AETH.Syndrome.Kind() != KindACK || p.AETH.MSN != 3 || p.PayloadLen != 0 {
				t.Errorf("AETH %+v payload %d", p.AETH, p.PayloadLen)
			}
			if s := p.AETH.Syndrome.String(); s != "ACK (no credit count)" {
				t.Errorf("syndrome %q", s)
			}
		}},
		{"rnr nak", "11 00 ffff 00 000022 00 000009 21 000000 01020304", func(t *testing.T, p *Packet) {
			s := p.AETH.Syndrome
			if s.Kind() != KindRNRNAK || !s.IsNAK() || s.RNRTimerMicros() != 10 || s.String() != "RNR NAK (timer 0.01 ms)" {
				t.Errorf("syndrome %v", s)
			}
		}},
		{"nak remote access", "11 00 ffff 00 000022 00 000009 62 000000 01020304", func(t *testing.T, p *Packet) {
			if s := p.AETH.Syndrome; s.NAKName() != "Remote Access Error" || s.String() != "NAK: Remote Access Error" {
				t.Errorf("syndrome %v", s)
			}
		}},
		{"nak psn sequence", "11 00 ffff 00 000022 00 000009 60 000000 01020304", func(t *testing.T, p *Packet) {
			if s := p.AETH.Syndrome; s.Kind() != KindNAK || s.Value() != NAKPSNSequenceError {
				t.Errorf("syndrome %v", s)
			}
		}},
		{"send only with immediate, pad 2", "05 a0 ffff 00 000033 80 000001 cafef00d 6869 0000 01020304", func(t *testing.T, p *Packet) {
			if !p.SE || p.PadCnt != 2 || p.ImmDt == nil || *p.ImmDt != 0xcafef00d || p.PayloadLen != 2 {
				t.Errorf("%+v imm %v", p, p.ImmDt)
			}
			if f := field(t, p, "Payload", "Pad"); f.Len != 2 {
				t.Errorf("pad %+v", f)
			}
		}},
		{"ud send only", "64 00 ffff 00 000001 00 000005 11111111 00 000044 6869 0000 01020304", func(t *testing.T, p *Packet) {
			if p.DETH == nil || p.DETH.QKey != 0x11111111 || p.DETH.SrcQP != 0x44 || p.Opcode.Service() != "UD" {
				t.Errorf("DETH %+v", p.DETH)
			}
		}},
		{"fetch add", "14 00 ffff 00 000001 80 000005 0000000000001000 00000042 0000000000000001 0000000000000000 01020304", func(t *testing.T, p *Packet) {
			if p.Atomic == nil || p.Atomic.SwapAdd != 1 || p.Atomic.RKey != 0x42 || p.PayloadLen != 0 {
				t.Errorf("AtomicETH %+v", p.Atomic)
			}
		}},
		{"read response first", "0d 00 ffff 00 000001 00 000005 00 000001 6162 01020304", func(t *testing.T, p *Packet) {
			if p.AETH == nil || p.PayloadLen != 2 || p.Opcode.IsRequest() {
				t.Errorf("%+v", p)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Decode(mustHex(t, tc.hex), 100)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, p)
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	if _, err := Decode(make([]byte, 15), 0); !errors.Is(err, ErrShort) {
		t.Errorf("15 bytes: %v", err)
	}
	// WRITE First needs a 16-byte RETH; this one has 4 bytes after the BTH.
	p, err := Decode(mustHex(t, "06 00 ffff 00 000011 80 000007 00000000 01020304"), 0)
	if !errors.Is(err, ErrTruncated) || p == nil || p.PSN != 7 {
		t.Errorf("truncated: %v %+v", err, p)
	}
	p, err = Decode(mustHex(t, "1f 00 ffff 00 000011 80 000007 01020304"), 0)
	if !errors.Is(err, ErrUnknownOpcode) || p == nil || p.Opcode.Known() {
		t.Errorf("reserved opcode: %v", err)
	}
	// An Acknowledge carries no payload.
	if _, err := Decode(mustHex(t, "11 00 ffff 00 000022 00 000009 1f 000003 6162 01020304"), 0); err == nil {
		t.Error("ACK with payload: no error")
	}
}

func TestOpcodeTable(t *testing.T) {
	want := map[Opcode]string{
		0x00: "RC SEND First", 0x04: "RC SEND Only", 0x06: "RC RDMA WRITE First", 0x07: "RC RDMA WRITE Middle",
		0x08: "RC RDMA WRITE Last", 0x0a: "RC RDMA WRITE Only", 0x0c: "RC RDMA READ Request",
		0x10: "RC RDMA READ Response Only", 0x11: "RC Acknowledge", 0x24: "UC SEND Only", 0x64: "UD SEND Only",
		0x2c: "reserved opcode 0x2c", // UC has no READ
		0x81: "CNP Congestion Notification",
	}
	for o, s := range want {
		if o.String() != s {
			t.Errorf("0x%02x: %q, want %q", uint8(o), o.String(), s)
		}
	}
}

// FuzzDecode: no input panics, and every field lies inside the packet.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		"06000000000011800000070000000012345000000000ab00000c00616263deadbeef",
		"110000000000220000000962000000 01020304",
		"0500ffff0000003380000001cafef00d686901020304",
		"64000000000001000000051111111100000044686901020304",
	} {
		b, _ := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Decode(b, 0)
		if p == nil {
			if err == nil {
				t.Fatal("nil packet without an error")
			}
			return
		}
		for _, fl := range p.Fields {
			if fl.Off < 0 || fl.Len <= 0 || fl.Off+fl.Len > len(b) {
				t.Fatalf("field %s.%s at %d+%d outside %d bytes", fl.Header, fl.Name, fl.Off, fl.Len, len(b))
			}
		}
		if p.PayloadLen < 0 || p.PayloadOff+p.PayloadLen > len(b) {
			t.Fatalf("payload %d+%d outside %d bytes", p.PayloadOff, p.PayloadLen, len(b))
		}
		_ = p.Summary()
	})
}

// TestSyndromeZh: every syndrome reads in Chinese with no English word but
// the protocol's own names (ACK, NAK, RNR, PSN, RD, ms).
func TestSyndromeZh(t *testing.T) {
	want := map[Syndrome]string{0x1f: "ACK（无信用计数）", 0x03: "ACK（信用码 3）", 0x21: "RNR NAK（计时器 0.01 ms）", 0x62: "NAK：远程访问错误", 0x60: "NAK：PSN 序列错误"}
	for s, w := range want {
		if got := s.StringZh(); got != w {
			t.Errorf("0x%02x: %q, want %q", uint8(s), got, w)
		}
	}
	allowed := map[string]bool{"ACK": true, "NAK": true, "RNR": true, "PSN": true, "RD": true, "ms": true}
	for i := 0; i < 256; i++ {
		zh := Syndrome(i).StringZh()
		words := regexp.MustCompile(`0x[0-9a-f]+`).ReplaceAllString(zh, " ")
		for _, w := range strings.FieldsFunc(words, func(r rune) bool { return r > 0x7f || r == ' ' || (r >= '0' && r <= '9') || r == '.' }) {
			if !allowed[w] {
				t.Errorf("0x%02x reads %q: English %q", i, zh, w)
			}
		}
	}
}
