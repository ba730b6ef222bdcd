package fleet

import (
	"encoding/json"
	"time"

	"github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/internal/textclip"
	"github.com/rdmalab/rdmalab/sandbox"
)

// What the lab server accepts from workers. A worker is another machine,
// possibly taken over, and its credential may leak: every byte it sends is
// bounded here, whatever the worker's own code does. The figures match the
// guest's (machines/vm/bounds.go): the largest legitimate message is a
// capture event near sandbox.DefaultMaxLine; the busiest run emits a few
// thousand events.
const (
	// maxMessage is NATS's max_payload: one event (the embedded server
	// refuses bigger messages from any client).
	maxMessage = sandbox.DefaultMaxLine + 4<<10
	// runEvents and runBytes bound one run's events; past them the run
	// fails and the worker is told to stop it.
	runEvents = rdmalab.RunEventsMax
	runBytes  = rdmalab.RunBytesMax
	// pendingMsgs and pendingBytes bound what waits in the server's
	// subscriptions: a flood past them is dropped by the NATS client (a
	// dropped event shows as a gap in the run's numbering and fails it).
	pendingMsgs  = 4096
	pendingBytes = 32 << 20
	// maxWorkers bounds /lab: heartbeats from more names are ignored
	// (nkey workers are bounded by the keys anyway; token workers name
	// themselves).
	maxWorkers = 64
	// heartbeatMin is the shortest gap between two heartbeats of one worker
	// that the server reads; faster ones are dropped unread.
	heartbeatMin = 250 * time.Millisecond
	maxHeartbeat = 16 << 10
	maxDevices   = 16
	// maxText bounds a worker's words the server keeps: an end's reason,
	// a device or accelerator name.
	maxText = 1 << 10
)

// sanitize keeps of heartbeat hb only what /lab and the scheduler may show
// and count: a known backend, bounded names, slots per known need, plain
// numbers.
func sanitize(hb Worker) Worker {
	out := Worker{Name: hb.Name, Backend: "none", Backends: map[string]int{}}
	switch hb.Backend {
	case "host", "vm", "none":
		out.Backend = hb.Backend
	}
	switch hb.Accel {
	case "kvm", "tcg":
		out.Accel = hb.Accel
	}
	for _, need := range []sandbox.Need{sandbox.NeedHost, sandbox.NeedRDMA} {
		if n := hb.Backends[string(need)]; n > 0 {
			out.Backends[string(need)] = min(n, 256)
		}
	}
	for i, d := range hb.Devices {
		if i == maxDevices {
			break
		}
		out.Devices = append(out.Devices, sandbox.Device{Name: textclip.Bytes(d.Name, 32), Netdev: textclip.Bytes(d.Netdev, 32),
			GID: textclip.Bytes(d.GID, 64), GIDIndex: d.GIDIndex})
	}
	if hb.Terms != nil && hb.Terms.Max > 0 {
		m := min(hb.Terms.Max, termPerHost)
		out.Terms = &rdmalab.TermLoad{Max: m, InUse: min(max(hb.Terms.InUse, 0), m)}
	}
	out.Running = min(max(hb.Running, 0), 1024)
	out.CPUs = min(max(hb.CPUs, 0), 1<<16)
	if hb.Load1 >= 0 && hb.Load1 < 1e6 {
		out.Load1 = hb.Load1
	}
	return out
}

// decodeHeartbeat reads a heartbeat of at most maxHeartbeat bytes.
func decodeHeartbeat(b []byte) (Worker, bool) {
	var w Worker
	if len(b) > maxHeartbeat || json.Unmarshal(b, &w) != nil {
		return Worker{}, false
	}
	return w, true
}
