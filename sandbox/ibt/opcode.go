// Package ibt decodes the InfiniBand transport headers that RoCEv2 carries
// in UDP (destination port 4791): the Base Transport Header (BTH) and the
// extended headers an opcode brings with it (RETH, AETH, ImmDt, IETH,
// DETH, RDETH, AtomicETH, AtomicAckETH), the payload and the invariant CRC
// (ICRC). It follows the IBTA specification, volume 1, chapter 9 (transport
// layer) and annex A17 (RoCEv2); Go has no other decoder for these headers.
//
// Decode never panics on any input (see the fuzz test) and reports every
// header field with its byte range, so a page can highlight the bytes of
// the field a learner clicks. It imports nothing but the standard library.
package ibt

import "fmt"

// Opcode is the BTH OpCode byte: bits 7–5 name the transport service
// (RC, UC, RD, UD, CNP, XRC), bits 4–0 the operation.
type Opcode uint8

// Transport services (the opcode's top three bits).
const (
	ServiceRC  = 0x00
	ServiceUC  = 0x20
	ServiceRD  = 0x40
	ServiceUD  = 0x60
	ServiceCNP = 0x80
	ServiceXRC = 0xa0
)

// Opcodes a learner meets in the lab (reliable connection).
const (
	RCSendFirst          Opcode = 0x00
	RCSendMiddle         Opcode = 0x01
	RCSendLast           Opcode = 0x02
	RCSendLastImm        Opcode = 0x03
	RCSendOnly           Opcode = 0x04
	RCSendOnlyImm        Opcode = 0x05
	RCWriteFirst         Opcode = 0x06
	RCWriteMiddle        Opcode = 0x07
	RCWriteLast          Opcode = 0x08
	RCWriteLastImm       Opcode = 0x09
	RCWriteOnly          Opcode = 0x0a
	RCWriteOnlyImm       Opcode = 0x0b
	RCReadRequest        Opcode = 0x0c
	RCReadResponseFirst  Opcode = 0x0d
	RCReadResponseMiddle Opcode = 0x0e
	RCReadResponseLast   Opcode = 0x0f
	RCReadResponseOnly   Opcode = 0x10
	RCAcknowledge        Opcode = 0x11
	RCAtomicAcknowledge  Opcode = 0x12
	RCCompareSwap        Opcode = 0x13
	RCFetchAdd           Opcode = 0x14
	RCSendLastInvalidate Opcode = 0x16
	RCSendOnlyInvalidate Opcode = 0x17
	UDSendOnly           Opcode = 0x64
	UDSendOnlyImm        Opcode = 0x65
	CNP                  Opcode = 0x81
)

// Header sizes in bytes (IBTA vol. 1, 9.2–9.3).
const (
	sizeBTH          = 12
	sizeRETH         = 16
	sizeAETH         = 4
	sizeImmDt        = 4
	sizeIETH         = 4
	sizeDETH         = 8
	sizeRDETH        = 4
	sizeAtomicETH    = 28
	sizeAtomicAckETH = 8
	sizeICRC         = 4
)

// ext says which extended headers follow the BTH, in wire order
// (RDETH, DETH, RETH/AtomicETH, AETH, AtomicAckETH, ImmDt/IETH).
type ext uint16

const (
	hRDETH ext = 1 << iota
	hDETH
	hRETH
	hAtomicETH
	hAETH
	hAtomicAckETH
	hImmDt
	hIETH
	hPayload // the packet may carry payload
)

// op is one row of the opcode table: the operation's name and headers.
type op struct {
	name string
	ext  ext
}

// ops is the operation part (bits 4–0) shared by RC, UC, RD and XRC
// (IBTA vol. 1, table 38). Each service allows a subset; see allowed.
var ops = map[uint8]op{
	0x00: {"SEND First", hPayload},
	0x01: {"SEND Middle", hPayload},
	0x02: {"SEND Last", hPayload},
	0x03: {"SEND Last with Immediate", hImmDt | hPayload},
	0x04: {"SEND Only", hPayload},
	0x05: {"SEND Only with Immediate", hImmDt | hPayload},
	0x06: {"RDMA WRITE First", hRETH | hPayload},
	0x07: {"RDMA WRITE Middle", hPayload},
	0x08: {"RDMA WRITE Last", hPayload},
	0x09: {"RDMA WRITE Last with Immediate", hImmDt | hPayload},
	0x0a: {"RDMA WRITE Only", hRETH | hPayload},
	0x0b: {"RDMA WRITE Only with Immediate", hRETH | hImmDt | hPayload},
	0x0c: {"RDMA READ Request", hRETH},
	0x0d: {"RDMA READ Response First", hAETH | hPayload},
	0x0e: {"RDMA READ Response Middle", hPayload},
	0x0f: {"RDMA READ Response Last", hAETH | hPayload},
	0x10: {"RDMA READ Response Only", hAETH | hPayload},
	0x11: {"Acknowledge", hAETH},
	0x12: {"ATOMIC Acknowledge", hAETH | hAtomicAckETH},
	0x13: {"CmpSwap", hAtomicETH},
	0x14: {"FetchAdd", hAtomicETH},
	0x16: {"SEND Last with Invalidate", hIETH | hPayload},
	0x17: {"SEND Only with Invalidate", hIETH | hPayload},
	0x1c: {"FLUSH", hRETH},
	0x1d: {"ATOMIC WRITE", hRETH | hPayload},
}

// allowed lists, per service, the operations the specification defines.
var allowed = map[uint8][]uint8{
	ServiceRC:  {0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x16, 0x17, 0x1c, 0x1d},
	ServiceUC:  {0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b},
	ServiceRD:  {0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14},
	ServiceXRC: {0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x16, 0x17},
}

var serviceNames = map[uint8]string{
	ServiceRC: "RC", ServiceUC: "UC", ServiceRD: "RD", ServiceUD: "UD", ServiceCNP: "CNP", ServiceXRC: "XRC",
}

// lookup returns the opcode's row and whether the specification defines it.
func (o Opcode) lookup() (op, bool) {
	svc, low := uint8(o)&0xe0, uint8(o)&0x1f
	switch svc {
	case ServiceUD:
		switch low {
		case 0x04:
			return op{"SEND Only", hDETH | hPayload}, true
		case 0x05:
			return op{"SEND Only with Immediate", hDETH | hImmDt | hPayload}, true
		}
		return op{}, false
	case ServiceCNP:
		if low == 0x01 {
			return op{"Congestion Notification", 0}, true
		}
		return op{}, false
	}
	list, ok := allowed[svc]
	if !ok {
		return op{}, false
	}
	for _, l := range list {
		if l == low {
			r := ops[low]
			if svc == ServiceRD {
				// Reliable datagram: every packet carries RDETH, and
				// requests carry DETH (IBTA 9.3.1).
				r.ext |= hRDETH
				if r.ext&hAETH == 0 {
					r.ext |= hDETH
				}
			}
			return r, true
		}
	}
	return op{}, false
}

// Known reports whether the specification defines this opcode.
func (o Opcode) Known() bool { _, ok := o.lookup(); return ok }

// Service is the transport service: "RC", "UC", "RD", "UD", "CNP", "XRC"
// or "reserved".
func (o Opcode) Service() string {
	if s, ok := serviceNames[uint8(o)&0xe0]; ok {
		return s
	}
	return "reserved"
}

// Operation is the opcode's name without the service, e.g. "RDMA WRITE First".
func (o Opcode) Operation() string {
	if r, ok := o.lookup(); ok {
		return r.name
	}
	return fmt.Sprintf("unknown 0x%02x", uint8(o))
}

// String is the service and operation, e.g. "RC RDMA WRITE First".
func (o Opcode) String() string {
	if r, ok := o.lookup(); ok {
		return o.Service() + " " + r.name
	}
	return fmt.Sprintf("reserved opcode 0x%02x", uint8(o))
}

// IsRequest reports whether a requester sends this opcode (as opposed to a
// responder's ACK, NAK or READ/ATOMIC response).
func (o Opcode) IsRequest() bool {
	low := uint8(o) & 0x1f
	if uint8(o)&0xe0 == ServiceCNP {
		return false
	}
	return !(low >= 0x0d && low <= 0x12)
}
