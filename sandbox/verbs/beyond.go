package verbs

import "fmt"

// The verbs past SEND, WRITE and READ (lesson 07): atomics, shared receive
// queues, memory windows and invalidation, async events, multicast, and
// the capability probes. Values as in <infiniband/verbs.h>.

// More access flags.
const (
	AccessMWBind    Access = 1 << 4 // memory windows may be bound to this MR
	AccessZeroBased Access = 1 << 5
	AccessOnDemand  Access = 1 << 6 // ODP: no pinning, the NIC faults pages in
)

// More send opcodes.
const (
	OpAtomicCmpSwp   Opcode = 5
	OpAtomicFetchAdd Opcode = 6
	OpLocalInv       Opcode = 7
	OpBindMW         Opcode = 8
	OpSendWithInv    Opcode = 9
)

// More completion opcodes.
const (
	WCCompSwap WCOpcode = 3
	WCFetchAdd WCOpcode = 4
	WCBindMW   WCOpcode = 5
	WCLocalInv WCOpcode = 6
)

// OpName names any send opcode, the ones of Opcode.String and these.
func OpName(o Opcode) string {
	switch o {
	case OpAtomicCmpSwp:
		return "ATOMIC_CMP_AND_SWP"
	case OpAtomicFetchAdd:
		return "ATOMIC_FETCH_AND_ADD"
	case OpLocalInv:
		return "LOCAL_INV"
	case OpBindMW:
		return "BIND_MW"
	case OpSendWithInv:
		return "SEND_WITH_INV"
	}
	return o.String()
}

// MWType is enum ibv_mw_type.
type MWType int

// Memory window types: a type 1 window is bound with ibv_bind_mw and may
// be used through any QP of its PD; a type 2 window is bound by a BIND_MW
// work request on a QP and is used through that QP only.
const (
	MWType1 MWType = 1
	MWType2 MWType = 2
)

// EventType is enum ibv_event_type: what ibv_get_async_event reports.
type EventType int

// Async event types.
const (
	EventCQErr            EventType = 0
	EventQPFatal          EventType = 1
	EventQPReqErr         EventType = 2
	EventQPAccessErr      EventType = 3
	EventCommEst          EventType = 4
	EventSQDrained        EventType = 5
	EventPortActive       EventType = 9
	EventPortErr          EventType = 10
	EventSRQErr           EventType = 14
	EventSRQLimitReached  EventType = 15
	EventQPLastWQEReached EventType = 16
	EventGIDChange        EventType = 18
)

var eventNames = [...]string{
	"IBV_EVENT_CQ_ERR", "IBV_EVENT_QP_FATAL", "IBV_EVENT_QP_REQ_ERR", "IBV_EVENT_QP_ACCESS_ERR",
	"IBV_EVENT_COMM_EST", "IBV_EVENT_SQ_DRAINED", "IBV_EVENT_PATH_MIG", "IBV_EVENT_PATH_MIG_ERR",
	"IBV_EVENT_DEVICE_FATAL", "IBV_EVENT_PORT_ACTIVE", "IBV_EVENT_PORT_ERR", "IBV_EVENT_LID_CHANGE",
	"IBV_EVENT_PKEY_CHANGE", "IBV_EVENT_SM_CHANGE", "IBV_EVENT_SRQ_ERR", "IBV_EVENT_SRQ_LIMIT_REACHED",
	"IBV_EVENT_QP_LAST_WQE_REACHED", "IBV_EVENT_CLIENT_REREGISTER", "IBV_EVENT_GID_CHANGE", "IBV_EVENT_WQ_FATAL",
}

func (e EventType) String() string {
	if int(e) >= 0 && int(e) < len(eventNames) {
		return eventNames[e]
	}
	return fmt.Sprintf("IBV_EVENT(%d)", int(e))
}

// QPError reports whether the event is one of the QP-affiliated errors
// (QP_FATAL, QP_REQ_ERR, QP_ACCESS_ERR): the QP went to the error state.
func (e EventType) QPError() bool {
	return e == EventQPFatal || e == EventQPReqErr || e == EventQPAccessErr
}

// AsyncEvent is one event read with ibv_get_async_event (and acknowledged).
type AsyncEvent struct {
	Type  EventType
	QPNum uint32 // QP-affiliated events
	Port  int    // port events
	// Element: "qp", "cq", "srq", "port" or "device".
	Element string
}

// Device capability flags (enum ibv_device_cap_flags) the lesson names.
const (
	DevCapPortActiveEvent = 1 << 10
	DevCapRCRNRNAKGen     = 1 << 12
	DevCapMemWindow       = 1 << 17
	DevCapXRC             = 1 << 20
	DevCapMemMgtExt       = 1 << 21
	DevCapMemWindow2A     = 1 << 23
	DevCapMemWindow2B     = 1 << 24
)

// AtomicCap is enum ibv_atomic_cap.
type AtomicCap int

// Atomic capabilities.
const (
	AtomicNone AtomicCap = 0 // no atomics
	AtomicHCA  AtomicCap = 1 // atomic with respect to this device's own atomics only
	AtomicGlob AtomicCap = 2 // atomic with respect to the CPU too
)

func (a AtomicCap) String() string {
	switch a {
	case AtomicNone:
		return "IBV_ATOMIC_NONE"
	case AtomicHCA:
		return "IBV_ATOMIC_HCA"
	case AtomicGlob:
		return "IBV_ATOMIC_GLOB"
	}
	return fmt.Sprintf("IBV_ATOMIC(%d)", int(a))
}

// Caps is what ibv_query_device_ex says about the features lesson 07 teaches.
type Caps struct {
	DeviceCapFlags                                    uint64
	AtomicCap                                         AtomicCap
	MaxQPRdAtom, MaxQPInitRdAtom, MaxResRdAtom        int
	MaxSRQ, MaxSRQWR, MaxMW, MaxMcastGrp, MaxMcastQPs int
	ODPGeneralCaps, ODPRCCaps                         uint32
	MaxDMSize                                         uint64
	CQModMaxCount, CQModMaxPeriod                     int
	Extended                                          bool // query_device_ex answered (else the legacy query)
}

// Has reports whether a device capability flag is set.
func (c Caps) Has(flag uint64) bool { return c.DeviceCapFlags&flag != 0 }

// Work completion flags (enum ibv_wc_flags, libibverbs' values).
const (
	WCFlagGRH      = 1 << 0
	WCFlagWithImm  = 1 << 1
	WCFlagIPCsumOK = 1 << 2 // the bit the kernel's enum ib_wc_flags calls IB_WC_WITH_INVALIDATE
	WCFlagWithInv  = 1 << 3 // the bit the kernel's enum ib_wc_flags calls IB_WC_IP_CSUM_OK
)

// InvCompletion is a receive completion with its invalidation fields: the
// raw wc_flags and invalidated_rkey as the provider wrote them.
type InvCompletion struct {
	WRID    uint64
	Status  WCStatus
	Flags   int
	InvRKey uint32
}

// WithInv reports whether wc_flags has IBV_WC_WITH_INV.
func (c InvCompletion) WithInv() bool { return c.Flags&WCFlagWithInv != 0 }
