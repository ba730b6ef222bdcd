// Package capture records the RoCEv2 packets that Soft-RoCE sends through
// a Linux network interface, keeps them within bounds, writes them as a
// .pcap file and decodes them for a packet list (Ethernet/IPv4/UDP with
// gopacket, the InfiniBand transport headers with package ibt).
//
// It works only because rxe is software: its packets are ordinary UDP
// datagrams (port 4791) that pass through the kernel's network stack, where
// an AF_PACKET socket sees them. A hardware RNIC builds and receives its
// packets on the card; the host kernel never sees them (that takes the
// NIC's own sniffer, ibdump, or a mirror port on the switch).
//
// Use in an experiment (inside the agent, as root):
//
//	c, err := capture.Start("veth0", capture.Limits{}, capture.QPFilter(capture.QP{IP: ipA, QPN: qpA}, …))
//	… run the RDMA operations …
//	res := c.Stop()                    // waits a moment for the last packets
//	emit.Emit(res.Event(hosts))        // one "capture" event, stored with the run
//
// and in a test or a handler: capture.Decode(ev.Capture.Pcap).
package capture

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/rdmalab/rdmalab/sandbox"
)

// RoCEv2Port is the UDP destination port of RoCEv2 (IANA "roce").
const RoCEv2Port = 4791

// Limits bound one capture. Zero fields take the defaults.
type Limits struct {
	Packets int // packets kept (default 200)
	Bytes   int // captured bytes kept, all packets together (default 256 KiB)
	Snap    int // bytes kept of each packet (default 2048: a 1024-byte-MTU RoCEv2 packet whole)
	// Head, when set, keeps a frame's first Head bytes (its headers) where
	// the whole frame would no longer leave room in Bytes for every later
	// packet's Head: frames are kept whole while the bound allows, then
	// cut, instead of dropped. 0 keeps every frame whole or not at all.
	Head int
}

// Defaults for Limits: a capture event stays well under the agent
// protocol's line limit (sandbox.DefaultMaxLine) after base64.
const (
	DefaultPackets = 200
	DefaultBytes   = 256 << 10
	DefaultSnap    = 2048
)

func (l Limits) norm() Limits {
	if l.Packets <= 0 {
		l.Packets = DefaultPackets
	}
	if l.Bytes <= 0 {
		l.Bytes = DefaultBytes
	}
	if l.Snap <= 0 {
		l.Snap = DefaultSnap
	}
	return l
}

// Frame is one captured Ethernet frame.
type Frame struct {
	Time time.Time
	Data []byte // at most Limits.Snap bytes
	Len  int    // length on the wire
}

// Capture is a running capture on one interface.
type Capture struct {
	iface string
	lim   Limits
	keep  func(frame []byte) bool
	h     *pcapgo.EthernetHandle
	done  chan struct{}

	mu       sync.Mutex
	stopping bool // Stop closed the socket: the read error that follows is the end
	frames   []Frame
	bytes    int
	seen     int // RoCEv2 frames seen, kept or not
	dropped  int // RoCEv2 frames over the limits
	err      error
}

// Start opens an AF_PACKET socket on iface (needs CAP_NET_RAW) and keeps
// every RoCEv2 frame that crosses it, in both directions, until Stop. A
// non-nil keep narrows that further (QPFilter keeps one run's queue pairs,
// so runs that share the guest stay out of each other's captures).
func Start(iface string, lim Limits, keep func(frame []byte) bool) (*Capture, error) {
	lim = lim.norm()
	h, err := pcapgo.NewEthernetHandle(iface)
	if err != nil {
		return nil, fmt.Errorf("capture on %s: %w", iface, err)
	}
	if err := h.SetCaptureLength(lim.Snap); err != nil {
		h.Close()
		return nil, fmt.Errorf("capture on %s: %w", iface, err)
	}
	c := &Capture{iface: iface, lim: lim, keep: keep, h: h, done: make(chan struct{})}
	go c.loop()
	return c, nil
}

func (c *Capture) loop() {
	defer close(c.done)
	for {
		data, ci, err := c.h.ReadPacketData()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			c.mu.Lock()
			// pcapgo wraps the close error as text, so errors.Is cannot see it.
			if !c.stopping && !errors.Is(err, os.ErrClosed) && !errors.Is(err, net.ErrClosed) {
				c.err = err
			}
			c.mu.Unlock()
			return
		}
		if !IsRoCEv2(data) || (c.keep != nil && !c.keep(data)) {
			continue
		}
		t := ci.Timestamp
		if t.IsZero() {
			t = time.Now()
		}
		c.add(data, t, ci.Length)
	}
}

// add keeps one frame if the limits allow.
func (c *Capture) add(data []byte, t time.Time, wireLen int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen++
	if len(c.frames) >= c.lim.Packets {
		c.dropped++
		return
	}
	if h := c.lim.Head; h > 0 && len(data) > h && c.bytes+len(data)+h*(c.lim.Packets-len(c.frames)-1) > c.lim.Bytes {
		data = data[:h]
	}
	if c.bytes+len(data) > c.lim.Bytes {
		c.dropped++
		return
	}
	c.frames = append(c.frames, Frame{Time: t, Data: append([]byte(nil), data...), Len: wireLen})
	c.bytes += len(data)
}

// Settle is how long Stop waits for packets still on their way (the last
// ACK of an operation comes after its completion was polled; under TCG a
// softirq may run late).
var Settle = 150 * time.Millisecond

// Count is the number of RoCEv2 frames kept so far.
func (c *Capture) Count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.frames)
}

// Stop waits Settle, closes the socket and returns what was kept.
func (c *Capture) Stop() Result {
	time.Sleep(Settle)
	c.mu.Lock()
	c.stopping = true
	c.mu.Unlock()
	c.h.Close()
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	return Result{Iface: c.iface, Frames: c.frames, Seen: c.seen, Dropped: c.dropped, Snap: c.lim.Snap, Err: c.err}
}

// Result is a finished capture.
type Result struct {
	Iface   string
	Frames  []Frame
	Seen    int // RoCEv2 frames seen
	Dropped int // seen but not kept (over the limits)
	Snap    int
	Err     error // a read error that ended the capture early
}

// IsRoCEv2 reports whether an Ethernet frame is IPv4 or IPv6 UDP to port 4791.
func IsRoCEv2(frame []byte) bool {
	if len(frame) < 14 {
		return false
	}
	et := uint16(frame[12])<<8 | uint16(frame[13])
	switch et {
	case 0x0800:
		ip := frame[14:]
		if len(ip) < 20 || ip[0]>>4 != 4 || ip[9] != 17 {
			return false
		}
		ihl := int(ip[0]&0x0f) * 4
		if len(ip) < ihl+8 {
			return false
		}
		return uint16(ip[ihl+2])<<8|uint16(ip[ihl+3]) == RoCEv2Port
	case 0x86dd:
		ip := frame[14:]
		if len(ip) < 48 || ip[6] != 17 {
			return false
		}
		return uint16(ip[42])<<8|uint16(ip[43]) == RoCEv2Port
	}
	return false
}

// QP is one queue pair of a capture: packets whose BTH names QPN as the
// destination and that go to IP.
type QP struct {
	IP  net.IP
	QPN uint32
}

// QPFilter keeps the RoCEv2 frames sent to one of qps: both directions of
// those connections and nothing of other runs (QP numbers repeat across
// devices, so the destination address counts too).
func QPFilter(qps ...QP) func(frame []byte) bool {
	return func(frame []byte) bool {
		off, ok := bthOffset(frame)
		if !ok || len(frame) < off+12 {
			return false
		}
		var dst net.IP
		if frame[12] == 0x08 {
			dst = net.IP(frame[14+16 : 14+20])
		} else {
			dst = net.IP(frame[14+24 : 14+40])
		}
		q := uint32(frame[off+5])<<16 | uint32(frame[off+6])<<8 | uint32(frame[off+7])
		for _, e := range qps {
			if e.QPN == q && e.IP.Equal(dst) {
				return true
			}
		}
		return false
	}
}

// bthOffset is where the BTH starts in a RoCEv2 frame.
func bthOffset(frame []byte) (int, bool) {
	if !IsRoCEv2(frame) {
		return 0, false
	}
	if frame[12] == 0x08 {
		return 14 + int(frame[14]&0x0f)*4 + 8, true
	}
	return 14 + 40 + 8, true
}

// Pcap writes the frames as a classic pcap file (nanosecond timestamps,
// Ethernet link type) that Wireshark and tshark open.
func (r Result) Pcap() ([]byte, error) {
	var buf bytesBuffer
	w := pcapgo.NewWriterNanos(&buf)
	snap := r.Snap
	if snap <= 0 {
		snap = DefaultSnap
	}
	if err := w.WriteFileHeader(uint32(snap), layers.LinkTypeEthernet); err != nil {
		return nil, err
	}
	for _, f := range r.Frames {
		ci := gopacket.CaptureInfo{Timestamp: f.Time, CaptureLength: len(f.Data), Length: f.Len}
		if ci.Length < ci.CaptureLength {
			ci.Length = ci.CaptureLength
		}
		if err := w.WritePacket(ci, f.Data); err != nil {
			return nil, err
		}
	}
	return buf.b, nil
}

type bytesBuffer struct{ b []byte }

func (b *bytesBuffer) Write(p []byte) (int, error) { b.b = append(b.b, p...); return len(p), nil }

// Event is the run event that stores this capture with the run: the pcap
// bytes and who is who (IP address → a name like "rxe1 (requester)" and
// "rxe1（请求方）", written in both languages where the roles are known).
func (r Result) Event(hosts map[string]sandbox.Text) (sandbox.Event, error) {
	data, err := r.Pcap()
	if err != nil {
		return sandbox.Event{}, err
	}
	en := fmt.Sprintf("captured %d RoCEv2 packets on %s", len(r.Frames), r.Iface)
	zh := fmt.Sprintf("在 %s 上抓到 %d 个 RoCEv2 报文", r.Iface, len(r.Frames))
	if r.Dropped > 0 {
		en += fmt.Sprintf(" (%d more not kept: the capture is bounded)", r.Dropped)
		zh += fmt.Sprintf("（另有 %d 个超出抓包上限，未保存）", r.Dropped)
	}
	c := &sandbox.Capture{Iface: r.Iface, Packets: len(r.Frames), Dropped: r.Dropped, Pcap: data}
	if len(hosts) > 0 {
		c.Hosts, c.HostsI18n = map[string]string{}, map[string]map[string]string{"zh": {}}
		for ip, t := range hosts {
			c.Hosts[ip], c.HostsI18n["zh"][ip] = t["en"], t.Get("zh")
		}
	}
	return sandbox.Event{Type: sandbox.EvCapture, Message: en, Messages: sandbox.Text{"en": en, "zh": zh}, Capture: c}, nil
}
