package ibt

import "fmt"

// Syndrome is the AETH syndrome byte (IBTA vol. 1, 9.7.5.1, table 44):
// bit 7 reserved, bits 6–5 the kind (00 ACK, 01 RNR NAK, 11 NAK), bits 4–0
// the credit count (ACK), the RNR timer (RNR NAK) or the NAK code.
type Syndrome uint8

// Syndrome kinds.
const (
	KindACK      = 0
	KindRNRNAK   = 1
	KindReserved = 2
	KindNAK      = 3
)

// NAK codes (bits 4–0 of a NAK syndrome).
const (
	NAKPSNSequenceError = 0
	NAKInvalidRequest   = 1
	NAKRemoteAccess     = 2
	NAKRemoteOperation  = 3
	NAKInvalidRDRequest = 4
)

// Kind is KindACK, KindRNRNAK, KindReserved or KindNAK.
func (s Syndrome) Kind() int { return int(s>>5) & 0x3 }

// Value is bits 4–0: credits, RNR timer code or NAK code.
func (s Syndrome) Value() int { return int(s) & 0x1f }

// IsNAK reports a NAK or an RNR NAK.
func (s Syndrome) IsNAK() bool { return s.Kind() == KindNAK || s.Kind() == KindRNRNAK }

var nakNames = map[int]string{
	NAKPSNSequenceError: "PSN Sequence Error",
	NAKInvalidRequest:   "Invalid Request",
	NAKRemoteAccess:     "Remote Access Error",
	NAKRemoteOperation:  "Remote Operational Error",
	NAKInvalidRDRequest: "Invalid RD Request",
}

// rnrTimer is the minimum RNR NAK timer per 5-bit code, in microseconds
// (IBTA vol. 1, table 45): code 0 is the longest, 655.36 ms.
var rnrTimer = [32]float64{
	655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920,
	2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
}

// RNRTimerMicros is the RNR NAK's timer in microseconds (0 if not an RNR NAK).
func (s Syndrome) RNRTimerMicros() float64 {
	if s.Kind() != KindRNRNAK {
		return 0
	}
	return rnrTimer[s.Value()]
}

// NAKName is the NAK code's name ("" when s is not a NAK).
func (s Syndrome) NAKName() string {
	if s.Kind() != KindNAK {
		return ""
	}
	if n, ok := nakNames[s.Value()]; ok {
		return n
	}
	return fmt.Sprintf("reserved NAK code %d", s.Value())
}

// String reads the syndrome: "ACK (credits: none/invalid)", "RNR NAK
// (timer 0.01 ms)", "NAK: Remote Access Error".
func (s Syndrome) String() string {
	switch s.Kind() {
	case KindACK:
		if s.Value() == 0x1f {
			return "ACK (no credit count)"
		}
		return fmt.Sprintf("ACK (credits code %d)", s.Value())
	case KindRNRNAK:
		return fmt.Sprintf("RNR NAK (timer %g ms)", s.RNRTimerMicros()/1000)
	case KindNAK:
		return "NAK: " + s.NAKName()
	}
	return fmt.Sprintf("reserved syndrome 0x%02x", uint8(s))
}

// nakNamesZh are nakNames in Chinese, for the learner's pages.
var nakNamesZh = map[int]string{
	NAKPSNSequenceError: "PSN 序列错误",
	NAKInvalidRequest:   "无效请求",
	NAKRemoteAccess:     "远程访问错误",
	NAKRemoteOperation:  "远程操作错误",
	NAKInvalidRDRequest: "无效 RD 请求",
}

// StringZh is String in Chinese: "ACK（无信用计数）", "NAK：远程访问错误".
func (s Syndrome) StringZh() string {
	switch s.Kind() {
	case KindACK:
		if s.Value() == 0x1f {
			return "ACK（无信用计数）"
		}
		return fmt.Sprintf("ACK（信用码 %d）", s.Value())
	case KindRNRNAK:
		return fmt.Sprintf("RNR NAK（计时器 %g ms）", s.RNRTimerMicros()/1000)
	case KindNAK:
		if n, ok := nakNamesZh[s.Value()]; ok {
			return "NAK：" + n
		}
		return fmt.Sprintf("NAK：保留的 NAK 码 %d", s.Value())
	}
	return fmt.Sprintf("保留的综合码 0x%02x", uint8(s))
}
