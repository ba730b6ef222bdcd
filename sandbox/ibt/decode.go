package ibt

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Field is one header field with where its bytes are, relative to the
// first byte of the BTH (Decode's Base shifts them). Bit fields share
// bytes: Bits is then the field's bit mask within those bytes, so a view
// can say "bit 7 of byte 1".
type Field struct {
	Header string `json:"header"` // "BTH", "RETH", "AETH", "ImmDt", …, "Payload", "ICRC"
	Name   string `json:"name"`   // e.g. "PSN", "R_Key"
	Off    int    `json:"off"`    // first byte
	Len    int    `json:"len"`    // bytes
	Bits   uint32 `json:"bits,omitempty"`
	Value  uint64 `json:"value"`
	Text   string `json:"text"` // the value as a reader wants it: "0x1234", "RDMA WRITE First", "RNR NAK (timer 0.01 ms)"
	// TextZh is Text for a Chinese page where Text holds words or
	// punctuation ("1024 字节", "1（置位）"); empty where Text is the same.
	TextZh string `json:"text_zh,omitempty"`
}

// RETH is the RDMA Extended Transport Header: where a WRITE or READ goes.
type RETH struct {
	VA     uint64 `json:"va"`
	RKey   uint32 `json:"rkey"`
	DMALen uint32 `json:"dma_len"`
}

// DETH is the Datagram Extended Transport Header (UD, RD).
type DETH struct {
	QKey  uint32 `json:"qkey"`
	SrcQP uint32 `json:"src_qp"`
}

// AtomicETH is the Atomic Extended Transport Header.
type AtomicETH struct {
	VA      uint64 `json:"va"`
	RKey    uint32 `json:"rkey"`
	SwapAdd uint64 `json:"swap_add"`
	Compare uint64 `json:"compare"`
}

// AETH is the ACK Extended Transport Header: the responder's verdict on a
// request (ACK, RNR NAK, NAK) and its message sequence number.
type AETH struct {
	Syndrome Syndrome `json:"syndrome"`
	MSN      uint32   `json:"msn"`
}

// Packet is a decoded InfiniBand transport packet (the UDP payload of a
// RoCEv2 packet).
type Packet struct {
	Opcode Opcode `json:"opcode"`
	SE     bool   `json:"se"`     // solicited event
	M      bool   `json:"m"`      // migration state
	PadCnt uint8  `json:"padcnt"` // pad bytes before the ICRC
	TVer   uint8  `json:"tver"`
	PKey   uint16 `json:"pkey"`
	FECN   bool   `json:"fecn"` // forward congestion notification (RoCEv2 leaves it 0: ECN lives in the IP header)
	BECN   bool   `json:"becn"`
	DestQP uint32 `json:"dest_qp"`
	AckReq bool   `json:"ackreq"`
	PSN    uint32 `json:"psn"`

	RETH      *RETH      `json:"reth,omitempty"`
	AETH      *AETH      `json:"aeth,omitempty"`
	ImmDt     *uint32    `json:"immdt,omitempty"`
	IETH      *uint32    `json:"ieth,omitempty"` // the R_Key to invalidate
	DETH      *DETH      `json:"deth,omitempty"`
	RDETH     *uint32    `json:"rdeth,omitempty"` // EE context
	Atomic    *AtomicETH `json:"atomic,omitempty"`
	AtomicAck *uint64    `json:"atomic_ack,omitempty"` // original remote data

	PayloadOff int    `json:"payload_off"` // relative to the BTH
	PayloadLen int    `json:"payload_len"` // without the pad bytes
	ICRC       uint32 `json:"icrc"`        // the four bytes as on the wire, read big-endian

	Fields []Field `json:"fields"`
}

// Decode errors.
var (
	ErrShort         = errors.New("ibt: shorter than a BTH and an ICRC")
	ErrUnknownOpcode = errors.New("ibt: opcode not defined by the specification")
	ErrTruncated     = errors.New("ibt: shorter than the headers its opcode needs")
)

// Decode reads the transport headers of one packet: b is the UDP payload,
// from the BTH to the ICRC inclusive. base is added to every Field offset
// (pass the BTH's offset in the frame to get frame offsets).
//
// On ErrUnknownOpcode and ErrTruncated the returned packet still holds
// what could be read (the BTH and the fields before the cut), so a view
// can show a malformed packet.
func Decode(b []byte, base int) (*Packet, error) {
	if len(b) < sizeBTH+sizeICRC {
		return nil, ErrShort
	}
	p := &Packet{}
	f := fieldAdder{p: p, base: base}
	p.Opcode = Opcode(b[0])
	p.SE = b[1]&0x80 != 0
	p.M = b[1]&0x40 != 0
	p.PadCnt = b[1] >> 4 & 0x3
	p.TVer = b[1] & 0x0f
	p.PKey = binary.BigEndian.Uint16(b[2:])
	p.FECN = b[4]&0x80 != 0
	p.BECN = b[4]&0x40 != 0
	p.DestQP = be24(b[5:])
	p.AckReq = b[8]&0x80 != 0
	p.PSN = be24(b[9:])

	f.add("BTH", "OpCode", 0, 1, 0, uint64(p.Opcode), fmt.Sprintf("%s (0x%02x)", p.Opcode, uint8(p.Opcode)))
	f.addZh("BTH", "SE (solicited event)", 1, 1, 0x80, b2u(p.SE), yesNo(p.SE), yesNoZh(p.SE))
	f.add("BTH", "M (migration)", 1, 1, 0x40, b2u(p.M), fmt.Sprint(b2u(p.M)))
	f.addZh("BTH", "PadCnt", 1, 1, 0x30, uint64(p.PadCnt), Bytes(int(p.PadCnt)), BytesZh(int(p.PadCnt)))
	f.add("BTH", "TVer", 1, 1, 0x0f, uint64(p.TVer), fmt.Sprint(p.TVer))
	f.add("BTH", "P_Key", 2, 2, 0, uint64(p.PKey), fmt.Sprintf("0x%04x", p.PKey))
	f.add("BTH", "FECN", 4, 1, 0x80, b2u(p.FECN), fmt.Sprint(b2u(p.FECN)))
	f.add("BTH", "BECN", 4, 1, 0x40, b2u(p.BECN), fmt.Sprint(b2u(p.BECN)))
	f.add("BTH", "Reserved", 4, 1, 0x3f, uint64(b[4]&0x3f), fmt.Sprintf("0x%02x", b[4]&0x3f))
	f.add("BTH", "DestQP", 5, 3, 0, uint64(p.DestQP), fmt.Sprintf("0x%06x (%d)", p.DestQP, p.DestQP))
	f.addZh("BTH", "A (AckReq)", 8, 1, 0x80, b2u(p.AckReq), yesNo(p.AckReq), yesNoZh(p.AckReq))
	f.add("BTH", "Reserved", 8, 1, 0x7f, uint64(b[8]&0x7f), fmt.Sprintf("0x%02x", b[8]&0x7f))
	f.add("BTH", "PSN", 9, 3, 0, uint64(p.PSN), fmt.Sprintf("%d (0x%06x)", p.PSN, p.PSN))

	icrcOff := len(b) - sizeICRC
	p.ICRC = binary.BigEndian.Uint32(b[icrcOff:])
	row, known := p.Opcode.lookup()
	off := sizeBTH
	need := func(n int) bool { return off+n <= icrcOff }
	var err error
	if !known {
		err = ErrUnknownOpcode
	}
	if known && row.ext&hRDETH != 0 {
		if !need(sizeRDETH) {
			return p.finish(&f, b, icrcOff, ErrTruncated)
		}
		v := be24(b[off+1:])
		p.RDETH = &v
		f.add("RDETH", "EE-Context", off+1, 3, 0, uint64(v), fmt.Sprintf("0x%06x", v))
		off += sizeRDETH
	}
	if known && row.ext&hDETH != 0 {
		if !need(sizeDETH) {
			return p.finish(&f, b, icrcOff, ErrTruncated)
		}
		d := DETH{QKey: binary.BigEndian.Uint32(b[off:]), SrcQP: be24(b[off+5:])}
		p.DETH = &d
		f.add("DETH", "Q_Key", off, 4, 0, uint64(d.QKey), fmt.Sprintf("0x%08x", d.QKey))
		f.add("DETH", "SrcQP", off+5, 3, 0, uint64(d.SrcQP), fmt.Sprintf("0x%06x", d.SrcQP))
		off += sizeDETH
	}
	if known && row.ext&hRETH != 0 {
		if !need(sizeRETH) {
			return p.finish(&f, b, icrcOff, ErrTruncated)
		}
		r := RETH{VA: binary.BigEndian.Uint64(b[off:]), RKey: binary.BigEndian.Uint32(b[off+8:]), DMALen: binary.BigEndian.Uint32(b[off+12:])}
		p.RETH = &r
		f.add("RETH", "Virtual Address", off, 8, 0, r.VA, fmt.Sprintf("0x%016x", r.VA))
		f.add("RETH", "R_Key", off+8, 4, 0, uint64(r.RKey), fmt.Sprintf("0x%08x", r.RKey))
		f.addZh("RETH", "DMA Length", off+12, 4, 0, uint64(r.DMALen), Bytes(int(r.DMALen)), BytesZh(int(r.DMALen)))
		off += sizeRETH
	}
	if known && row.ext&hAtomicETH != 0 {
		if !need(sizeAtomicETH) {
			return p.finish(&f, b, icrcOff, ErrTruncated)
		}
		a := AtomicETH{VA: binary.BigEndian.Uint64(b[off:]), RKey: binary.BigEndian.Uint32(b[off+8:]),
			SwapAdd: binary.BigEndian.Uint64(b[off+12:]), Compare: binary.BigEndian.Uint64(b[off+20:])}
		p.Atomic = &a
		f.add("AtomicETH", "Virtual Address", off, 8, 0, a.VA, fmt.Sprintf("0x%016x", a.VA))
		f.add("AtomicETH", "R_Key", off+8, 4, 0, uint64(a.RKey), fmt.Sprintf("0x%08x", a.RKey))
		f.add("AtomicETH", "Swap (Add) Data", off+12, 8, 0, a.SwapAdd, fmt.Sprintf("0x%016x", a.SwapAdd))
		f.add("AtomicETH", "Compare Data", off+20, 8, 0, a.Compare, fmt.Sprintf("0x%016x", a.Compare))
		off += sizeAtomicETH
	}
	if known && row.ext&hAETH != 0 {
		if !need(sizeAETH) {
			return p.finish(&f, b, icrcOff, ErrTruncated)
		}
		a := AETH{Syndrome: Syndrome(b[off]), MSN: be24(b[off+1:])}
		p.AETH = &a
		f.addZh("AETH", "Syndrome", off, 1, 0, uint64(a.Syndrome), fmt.Sprintf("%s (0x%02x)", a.Syndrome, uint8(a.Syndrome)), fmt.Sprintf("%s（0x%02x）", a.Syndrome.StringZh(), uint8(a.Syndrome)))
		f.add("AETH", "MSN", off+1, 3, 0, uint64(a.MSN), fmt.Sprint(a.MSN))
		off += sizeAETH
	}
	if known && row.ext&hAtomicAckETH != 0 {
		if !need(sizeAtomicAckETH) {
			return p.finish(&f, b, icrcOff, ErrTruncated)
		}
		v := binary.BigEndian.Uint64(b[off:])
		p.AtomicAck = &v
		f.add("AtomicAckETH", "Original Remote Data", off, 8, 0, v, fmt.Sprintf("0x%016x", v))
		off += sizeAtomicAckETH
	}
	if known && row.ext&hImmDt != 0 {
		if !need(sizeImmDt) {
			return p.finish(&f, b, icrcOff, ErrTruncated)
		}
		v := binary.BigEndian.Uint32(b[off:])
		p.ImmDt = &v
		f.add("ImmDt", "Immediate Data", off, 4, 0, uint64(v), fmt.Sprintf("0x%08x", v))
		off += sizeImmDt
	}
	if known && row.ext&hIETH != 0 {
		if !need(sizeIETH) {
			return p.finish(&f, b, icrcOff, ErrTruncated)
		}
		v := binary.BigEndian.Uint32(b[off:])
		p.IETH = &v
		f.add("IETH", "R_Key", off, 4, 0, uint64(v), fmt.Sprintf("0x%08x", v))
		off += sizeIETH
	}
	p.PayloadOff = off + base
	if n := icrcOff - off - int(p.PadCnt); n > 0 {
		p.PayloadLen = n
		if known && row.ext&hPayload == 0 {
			err = errors.Join(err, fmt.Errorf("ibt: %s carries no payload, found %d bytes", p.Opcode, n))
		}
		f.addZh("Payload", "Data", off, n, 0, uint64(n), Bytes(n), BytesZh(n))
	}
	return p.finish(&f, b, icrcOff, err)
}

// finish adds the pad and ICRC fields.
func (p *Packet) finish(f *fieldAdder, b []byte, icrcOff int, err error) (*Packet, error) {
	if err == nil || !errors.Is(err, ErrTruncated) {
		if pad := int(p.PadCnt); pad > 0 && icrcOff-pad >= sizeBTH {
			f.addZh("Payload", "Pad", icrcOff-pad, pad, 0, uint64(pad), Bytes(pad), BytesZh(pad))
		}
	}
	f.add("ICRC", "ICRC", icrcOff, sizeICRC, 0, uint64(p.ICRC), fmt.Sprintf("0x%08x", p.ICRC))
	_ = b
	return p, err
}

type fieldAdder struct {
	p    *Packet
	base int
}

func (f *fieldAdder) add(header, name string, off, n int, bits uint32, v uint64, text string) {
	f.addZh(header, name, off, n, bits, v, text, "")
}

// addZh adds a field whose value reads differently in Chinese.
func (f *fieldAdder) addZh(header, name string, off, n int, bits uint32, v uint64, text, zh string) {
	f.p.Fields = append(f.p.Fields, Field{Header: header, Name: name, Off: f.base + off, Len: n, Bits: bits, Value: v, Text: text, TextZh: zh})
}

// Summary is one line like a packet list shows: opcode, PSN and what the
// packet says, e.g. "RDMA WRITE First PSN 7 len 1024 AckReq".
func (p *Packet) Summary() string { return p.summary("en") }

// SummaryZh is Summary for a Chinese page: the syndrome in Chinese,
// "载荷" for the payload.
func (p *Packet) SummaryZh() string { return p.summary("zh") }

func (p *Packet) summary(lang string) string {
	s := fmt.Sprintf("%s QP 0x%06x PSN %d", p.Opcode.Operation(), p.DestQP, p.PSN)
	if p.AETH != nil {
		if lang == "zh" {
			s += " " + p.AETH.Syndrome.StringZh()
		} else {
			s += " " + p.AETH.Syndrome.String()
		}
	}
	if p.RETH != nil {
		s += fmt.Sprintf(" rkey 0x%08x len %d", p.RETH.RKey, p.RETH.DMALen)
	}
	if p.PayloadLen > 0 {
		if lang == "zh" {
			s += fmt.Sprintf(" 载荷 %d", p.PayloadLen)
		} else {
			s += fmt.Sprintf(" payload %d", p.PayloadLen)
		}
	}
	if p.AckReq {
		s += " AckReq"
	}
	return s
}

func be24(b []byte) uint32 { return uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2]) }

func b2u(v bool) uint64 {
	if v {
		return 1
	}
	return 0
}

func yesNo(v bool) string {
	if v {
		return "1 (set)"
	}
	return "0"
}

func yesNoZh(v bool) string {
	if v {
		return "1（置位）"
	}
	return "0"
}

// Bytes is a length as a field's value: "1024 bytes".
func Bytes(n int) string { return fmt.Sprintf("%d bytes", n) }

// BytesZh is Bytes in Chinese: "1024 字节".
func BytesZh(n int) string { return fmt.Sprintf("%d 字节", n) }
