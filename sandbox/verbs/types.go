package verbs

import (
	"fmt"
	"strings"
)

// Access is a set of ibv_access_flags: what the NIC may do with an MR (or
// what a remote peer may do through a QP).
type Access int

// Access flags, values as in <infiniband/verbs.h>.
const (
	AccessLocalWrite  Access = 1
	AccessRemoteWrite Access = 1 << 1
	AccessRemoteRead  Access = 1 << 2
	AccessRemoteAtom  Access = 1 << 3
)

func (a Access) String() string {
	if a == 0 {
		return "0"
	}
	var parts []string
	for _, f := range []struct {
		bit  Access
		name string
	}{{AccessLocalWrite, "LOCAL_WRITE"}, {AccessRemoteWrite, "REMOTE_WRITE"}, {AccessRemoteRead, "REMOTE_READ"}, {AccessRemoteAtom, "REMOTE_ATOMIC"}} {
		if a&f.bit != 0 {
			parts = append(parts, f.name)
		}
	}
	return strings.Join(parts, "|")
}

// QPState is enum ibv_qp_state.
type QPState int

// QP states.
const (
	StateReset QPState = iota
	StateInit
	StateRTR
	StateRTS
	StateSQD
	StateSQE
	StateError
)

var qpStateNames = [...]string{"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERROR"}

func (s QPState) String() string {
	if int(s) >= 0 && int(s) < len(qpStateNames) {
		return qpStateNames[s]
	}
	return fmt.Sprintf("QPState(%d)", int(s))
}

// MTU is enum ibv_mtu (1 = 256 bytes … 5 = 4096 bytes).
type MTU int

// Bytes is the MTU in bytes.
func (m MTU) Bytes() int {
	if m < 1 || m > 5 {
		return 0
	}
	return 128 << m
}

// Opcode is enum ibv_wr_opcode: what a posted send work request does.
type Opcode int

// Send opcodes, values as in <infiniband/verbs.h>.
const (
	OpWrite        Opcode = 0
	OpWriteWithImm Opcode = 1
	OpSend         Opcode = 2
	OpSendWithImm  Opcode = 3
	OpRead         Opcode = 4
)

func (o Opcode) String() string {
	switch o {
	case OpWrite:
		return "RDMA_WRITE"
	case OpWriteWithImm:
		return "RDMA_WRITE_WITH_IMM"
	case OpSend:
		return "SEND"
	case OpSendWithImm:
		return "SEND_WITH_IMM"
	case OpRead:
		return "RDMA_READ"
	}
	return fmt.Sprintf("Opcode(%d)", int(o))
}

// SendFlags is enum ibv_send_flags.
type SendFlags int

// Send flags.
const (
	SendFence     SendFlags = 1
	SendSignaled  SendFlags = 1 << 1
	SendSolicited SendFlags = 1 << 2
	SendInline    SendFlags = 1 << 3
)

// WCOpcode is enum ibv_wc_opcode: what a completion completed.
type WCOpcode int

// Completion opcodes.
const (
	WCSend            WCOpcode = 0
	WCRDMAWrite       WCOpcode = 1
	WCRDMARead        WCOpcode = 2
	WCRecv            WCOpcode = 1 << 7
	WCRecvRDMAWithImm WCOpcode = 1<<7 + 1
)

func (o WCOpcode) String() string {
	switch o {
	case WCSend:
		return "SEND"
	case WCRDMAWrite:
		return "RDMA_WRITE"
	case WCRDMARead:
		return "RDMA_READ"
	case WCRecv:
		return "RECV"
	case WCRecvRDMAWithImm:
		return "RECV_RDMA_WITH_IMM"
	}
	return fmt.Sprintf("WCOpcode(%d)", int(o))
}

// WCStatus is enum ibv_wc_status.
type WCStatus int

// The completion statuses the experiments meet; the others have names too.
const (
	WCSuccess        WCStatus = 0
	WCLocLenErr      WCStatus = 1
	WCLocQPOpErr     WCStatus = 2
	WCLocProtErr     WCStatus = 4
	WCWRFlushErr     WCStatus = 5
	WCRemInvReqErr   WCStatus = 9
	WCRemAccessErr   WCStatus = 10
	WCRemOpErr       WCStatus = 11
	WCRetryExcErr    WCStatus = 12
	WCRNRRetryExcErr WCStatus = 13
)

// wcStatus holds the enum name and libibverbs' ibv_wc_status_str text; kept
// in Go so a build without cgo can still name statuses in replays.
var wcStatus = [...][2]string{
	{"IBV_WC_SUCCESS", "success"},
	{"IBV_WC_LOC_LEN_ERR", "local length error"},
	{"IBV_WC_LOC_QP_OP_ERR", "local QP operation error"},
	{"IBV_WC_LOC_EEC_OP_ERR", "local EE context operation error"},
	{"IBV_WC_LOC_PROT_ERR", "local protection error"},
	{"IBV_WC_WR_FLUSH_ERR", "Work Request Flushed Error"},
	{"IBV_WC_MW_BIND_ERR", "memory management operation error"},
	{"IBV_WC_BAD_RESP_ERR", "bad response error"},
	{"IBV_WC_LOC_ACCESS_ERR", "local access error"},
	{"IBV_WC_REM_INV_REQ_ERR", "remote invalid request error"},
	{"IBV_WC_REM_ACCESS_ERR", "remote access error"},
	{"IBV_WC_REM_OP_ERR", "remote operation error"},
	{"IBV_WC_RETRY_EXC_ERR", "transport retry counter exceeded"},
	{"IBV_WC_RNR_RETRY_EXC_ERR", "RNR retry counter exceeded"},
	{"IBV_WC_LOC_RDD_VIOL_ERR", "local RDD violation error"},
	{"IBV_WC_REM_INV_RD_REQ_ERR", "remote invalid RD request"},
	{"IBV_WC_REM_ABORT_ERR", "aborted error"},
	{"IBV_WC_INV_EECN_ERR", "invalid EE context number"},
	{"IBV_WC_INV_EEC_STATE_ERR", "invalid EE context state"},
	{"IBV_WC_FATAL_ERR", "fatal error"},
	{"IBV_WC_RESP_TIMEOUT_ERR", "response timeout error"},
	{"IBV_WC_GENERAL_ERR", "general error"},
	{"IBV_WC_TM_ERR", "TM error"},
	{"IBV_WC_TM_RNDV_INCOMPLETE", "TM software rendezvous"},
}

// String is the enum name, e.g. "IBV_WC_REM_ACCESS_ERR".
func (s WCStatus) String() string {
	if int(s) >= 0 && int(s) < len(wcStatus) {
		return wcStatus[s][0]
	}
	return fmt.Sprintf("IBV_WC_STATUS(%d)", int(s))
}

// Description is libibverbs' ibv_wc_status_str text, e.g. "remote access error".
func (s WCStatus) Description() string {
	if int(s) >= 0 && int(s) < len(wcStatus) {
		return wcStatus[s][1]
	}
	return "unknown"
}

// WC is one work completion (struct ibv_wc).
type WC struct {
	WRID      uint64
	Status    WCStatus
	Opcode    WCOpcode
	VendorErr uint32
	ByteLen   uint32
	Imm       uint32 // host order; valid when HasImm
	HasImm    bool
	QPNum     uint32
	SrcQP     uint32 // UD receive: the sender's QP number
	GRH       bool   // UD receive: the first 40 bytes of the buffer hold a GRH
}

// Err is nil for a successful completion, a *WCError otherwise.
func (w WC) Err() error {
	if w.Status == WCSuccess {
		return nil
	}
	return &WCError{WC: w}
}

// PortAttr is the part of struct ibv_port_attr the lab uses.
type PortAttr struct {
	State     int // 4 = ACTIVE
	MaxMTU    MTU
	ActiveMTU MTU
	GIDTblLen int
	LID       uint16
	LinkLayer int // 1 = InfiniBand, 2 = Ethernet (RoCE)
}

// Active reports whether the port can carry traffic.
func (p PortAttr) Active() bool { return p.State == 4 }

// DeviceAttr is the part of struct ibv_device_attr the lab uses.
type DeviceAttr struct {
	MaxQP, MaxQPWR, MaxCQ, MaxCQE, MaxMR, MaxPD int
	MaxMRSize                                   uint64
}

// QPType is enum ibv_qp_type: the transport service of a QP.
type QPType int

// QP types, values as in <infiniband/verbs.h>.
const (
	QPTypeRC QPType = 2 // reliable connected: one peer, acknowledged, any size
	QPTypeUC QPType = 3 // unreliable connected: one peer, no ACKs, no READ
	QPTypeUD QPType = 4 // unreliable datagram: any peer per message, ≤ one MTU
)

func (t QPType) String() string {
	switch t {
	case QPTypeRC, 0:
		return "RC"
	case QPTypeUC:
		return "UC"
	case QPTypeUD:
		return "UD"
	}
	return fmt.Sprintf("QPType(%d)", int(t))
}

// GRHBytes is the Global Routing Header a UD receive buffer must leave room
// for: the first 40 bytes of every UD receive hold it (on RoCE v2 over IPv4,
// bytes 20–39 hold the packet's IPv4 header).
const GRHBytes = 40

// QPCaps sizes a new QP.
type QPCaps struct {
	MaxSendWR, MaxRecvWR int
	MaxInline            int
	Type                 QPType // 0 = RC
}

// QPAttr carries the attributes of the RC state transitions. Modify picks the
// fields each transition needs (the mask), as the IB spec requires.
type QPAttr struct {
	// INIT
	Port        int    // physical port, 1-based
	PKeyIndex   int    // partition key index, 0 on RoCE
	AccessFlags Access // what the remote side may do through this QP
	QKey        uint32 // UD only: datagrams must carry this key to be accepted

	// RTR: where the peer is, and what we accept from it
	PathMTU         MTU
	DestQPN         uint32
	RQPSN           uint32 // first packet sequence number expected from the peer
	DGID            GID
	SGIDIndex       int
	HopLimit        int
	TrafficClass    int // the IP header's TOS byte on RoCEv2: DSCP << 2 | ECN
	MaxDestRdAtomic int
	MinRNRTimer     int // IB encoding: 1 = 0.01 ms … 31 = 491 ms, 0 = 655 ms

	// RTS: how we send
	SQPSN       uint32
	Timeout     int // 4.096 µs × 2^Timeout before a retry
	RetryCnt    int
	RNRRetry    int // 7 = retry forever
	MaxRdAtomic int
}

// DefaultQPAttr returns the attributes perftest uses for RC, given the local
// port, GID index and MTU.
func DefaultQPAttr(port, gidIndex int, mtu MTU) QPAttr {
	return QPAttr{
		Port: port, AccessFlags: AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead,
		PathMTU: mtu, SGIDIndex: gidIndex, HopLimit: 64, MaxDestRdAtomic: 1, MinRNRTimer: 12,
		Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRdAtomic: 1,
	}
}

// SendWR is one send-queue work request with at most one local buffer.
type SendWR struct {
	ID     uint64
	Op     Opcode
	Flags  SendFlags
	MR     *MR // local memory; nil for a zero-length request
	Offset int // into MR
	Length int
	// RemoteAddr and RKey name the peer's memory (WRITE, READ).
	RemoteAddr uint64
	RKey       uint32
	Imm        uint32 // immediate data (…_WITH_IMM), host order
}
