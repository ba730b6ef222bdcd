package capture

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/rdmalab/rdmalab/sandbox/ibt"
)

// Packet is one row of a packet list and everything its detail view shows.
// Field offsets are into the frame, so Hex[2*Off:2*(Off+Len)] are a
// field's bytes.
type Packet struct {
	No         int         `json:"no"`   // 1-based
	Time       float64     `json:"time"` // seconds since the first packet
	Src        string      `json:"src"`
	Dst        string      `json:"dst"`
	SrcName    string      `json:"src_name,omitempty"`
	DstName    string      `json:"dst_name,omitempty"`
	Len        int         `json:"len"` // on the wire
	CapLen     int         `json:"caplen"`
	Truncated  bool        `json:"truncated,omitempty"` // CapLen < Len: payload cut, ICRC not captured
	DestQP     uint32      `json:"dest_qp"`
	Opcode     uint8       `json:"opcode"`
	OpName     string      `json:"op"` // e.g. "RDMA WRITE First"
	Service    string      `json:"service"`
	PSN        uint32      `json:"psn"`
	AckReq     bool        `json:"ackreq"`
	PayloadLen int         `json:"payload_len"`
	Syndrome   string      `json:"syndrome,omitempty"`      // AETH, read out
	SyndromeZh string      `json:"syndrome_zh,omitempty"`   // the same in Chinese
	NAK        bool        `json:"nak,omitempty"`           // an RNR NAK or a NAK
	ICRCOK     *bool       `json:"icrc_ok,omitempty"`       // nil: not checked (truncated, IPv6)
	ICRCWant   string      `json:"icrc_expected,omitempty"` // the ICRC computed here, when the packet's differs
	Summary    string      `json:"summary"`
	SummaryZh  string      `json:"summary_zh,omitempty"` // Summary for a Chinese page
	Error      string      `json:"error,omitempty"`
	Fields     []ibt.Field `json:"fields"`
	Hex        string      `json:"hex"`
	IB         *ibt.Packet `json:"-"`
}

// ReadPcap returns the frames of a classic pcap file.
func ReadPcap(data []byte) ([]Frame, error) {
	r, err := pcapgo.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("capture: read pcap: %w", err)
	}
	var out []Frame
	for {
		d, ci, err := r.ReadPacketData()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("capture: read pcap packet %d: %w", len(out)+1, err)
		}
		out = append(out, Frame{Time: ci.Timestamp, Data: d, Len: ci.Length})
	}
}

// Decode reads a pcap file and decodes every frame; hosts names addresses
// (may be nil). A frame that is not RoCEv2, or is malformed, is still
// listed with its Error set.
func Decode(data []byte, hosts map[string]string) ([]Packet, error) {
	frames, err := ReadPcap(data)
	if err != nil {
		return nil, err
	}
	out := make([]Packet, 0, len(frames))
	for i, f := range frames {
		p := decodeFrame(f.Data, f.Len, hosts)
		p.No = i + 1
		if i > 0 {
			p.Time = f.Time.Sub(frames[0].Time).Seconds()
		}
		out = append(out, p)
	}
	return out, nil
}

// DecodeFrame decodes one Ethernet frame: Ethernet, IPv4 or IPv6 and UDP
// with gopacket, the transport headers with ibt.
func DecodeFrame(frame []byte, hosts map[string]string) Packet {
	return decodeFrame(frame, len(frame), hosts)
}

// decodeFrame decodes a frame of which the first len(frame) of wireLen
// bytes were captured. A cut frame (a snap length below the packet) is
// decoded from its headers; its payload length comes from the UDP length,
// and its ICRC, not captured, is neither shown nor checked (issue 30 saw
// a 128-byte snap of a 1098-byte packet called "ICRC wrong", payload 54).
func decodeFrame(frame []byte, wireLen int, hosts map[string]string) Packet {
	if wireLen < len(frame) {
		wireLen = len(frame)
	}
	p := Packet{CapLen: len(frame), Len: wireLen, Truncated: wireLen > len(frame), Hex: hex.EncodeToString(frame)}
	addZh := func(header, name string, off, n int, bits uint32, v uint64, text, zh string) {
		if off < 0 || off+n > len(frame) {
			return // a truncated frame: gopacket may still name the field
		}
		p.Fields = append(p.Fields, ibt.Field{Header: header, Name: name, Off: off, Len: n, Bits: bits, Value: v, Text: text, TextZh: zh})
	}
	add := func(header, name string, off, n int, bits uint32, v uint64, text string) {
		addZh(header, name, off, n, bits, v, text, "")
	}
	pkt := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.DecodeOptions{NoCopy: true, Lazy: false})
	eth, _ := pkt.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	if eth == nil {
		p.Error = "not an Ethernet frame"
		p.Summary = p.Error
		return p
	}
	add("Ethernet", "Destination", 0, 6, 0, 0, eth.DstMAC.String())
	add("Ethernet", "Source", 6, 6, 0, 0, eth.SrcMAC.String())
	add("Ethernet", "EtherType", 12, 2, 0, uint64(eth.EthernetType), fmt.Sprintf("%s (0x%04x)", eth.EthernetType, uint16(eth.EthernetType)))
	off := 14
	var ipHdr []byte
	if ip4, ok := pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4); ok {
		hl := int(ip4.IHL) * 4
		if hl < 20 || off+hl > len(frame) {
			p.Error = "truncated IPv4 header"
			p.Summary = p.Error
			return p
		}
		ipHdr = frame[off : off+hl]
		p.Src, p.Dst = ip4.SrcIP.String(), ip4.DstIP.String()
		add("IPv4", "Version", off, 1, 0xf0, uint64(ip4.Version), fmt.Sprint(ip4.Version))
		addZh("IPv4", "Header Length", off, 1, 0x0f, uint64(hl), ibt.Bytes(hl), ibt.BytesZh(hl))
		add("IPv4", "DSCP", off+1, 1, 0xfc, uint64(ip4.TOS>>2), fmt.Sprint(ip4.TOS>>2))
		addZh("IPv4", "ECN", off+1, 1, 0x03, uint64(ip4.TOS&3), ecnName(ip4.TOS&3), ecnNameZh(ip4.TOS&3))
		add("IPv4", "Total Length", off+2, 2, 0, uint64(ip4.Length), fmt.Sprint(ip4.Length))
		add("IPv4", "Identification", off+4, 2, 0, uint64(ip4.Id), fmt.Sprintf("0x%04x", ip4.Id))
		add("IPv4", "Flags", off+6, 1, 0xe0, uint64(ip4.Flags), ip4.Flags.String())
		add("IPv4", "Fragment Offset", off+6, 2, 0x1fff, uint64(ip4.FragOffset), fmt.Sprint(ip4.FragOffset))
		add("IPv4", "TTL", off+8, 1, 0, uint64(ip4.TTL), fmt.Sprint(ip4.TTL))
		add("IPv4", "Protocol", off+9, 1, 0, uint64(ip4.Protocol), fmt.Sprintf("%s (%d)", ip4.Protocol, uint8(ip4.Protocol)))
		add("IPv4", "Header Checksum", off+10, 2, 0, uint64(ip4.Checksum), fmt.Sprintf("0x%04x", ip4.Checksum))
		add("IPv4", "Source", off+12, 4, 0, 0, p.Src)
		add("IPv4", "Destination", off+16, 4, 0, 0, p.Dst)
		off += hl
	} else if ip6, ok := pkt.Layer(layers.LayerTypeIPv6).(*layers.IPv6); ok {
		p.Src, p.Dst = ip6.SrcIP.String(), ip6.DstIP.String()
		add("IPv6", "Traffic Class", off, 2, 0x0ff0, uint64(ip6.TrafficClass), fmt.Sprintf("0x%02x", ip6.TrafficClass))
		add("IPv6", "Payload Length", off+4, 2, 0, uint64(ip6.Length), fmt.Sprint(ip6.Length))
		add("IPv6", "Next Header", off+6, 1, 0, uint64(ip6.NextHeader), ip6.NextHeader.String())
		add("IPv6", "Hop Limit", off+7, 1, 0, uint64(ip6.HopLimit), fmt.Sprint(ip6.HopLimit))
		add("IPv6", "Source", off+8, 16, 0, 0, p.Src)
		add("IPv6", "Destination", off+24, 16, 0, 0, p.Dst)
		off += 40
	} else {
		p.Error = "not IP"
		p.Summary = p.Error
		return p
	}
	p.SrcName, p.DstName = hosts[p.Src], hosts[p.Dst]
	udp, ok := pkt.Layer(layers.LayerTypeUDP).(*layers.UDP)
	if !ok || len(frame) < off+8 {
		p.Error = "not UDP"
		p.Summary = p.Error
		return p
	}
	add("UDP", "Source Port", off, 2, 0, uint64(udp.SrcPort), fmt.Sprint(uint16(udp.SrcPort)))
	add("UDP", "Destination Port", off+2, 2, 0, uint64(udp.DstPort), fmt.Sprintf("%d (%s)", uint16(udp.DstPort), portName(uint16(udp.DstPort))))
	add("UDP", "Length", off+4, 2, 0, uint64(udp.Length), fmt.Sprint(udp.Length))
	add("UDP", "Checksum", off+6, 2, 0, uint64(udp.Checksum), fmt.Sprintf("0x%04x", udp.Checksum))
	if uint16(udp.DstPort) != RoCEv2Port {
		p.Error = "UDP, not RoCEv2 (port 4791)"
		p.Summary = p.Error
		return p
	}
	end := len(frame)
	if ul := off + int(udp.Length); udp.Length >= 8 && ul <= end {
		end = ul // Ethernet padding is not part of the datagram
	}
	datagram := frame[off+8 : end]
	if p.Truncated && udp.Length >= 8 && off+int(udp.Length) > len(frame) && off+int(udp.Length) <= wireLen {
		// the headers are here, the rest of the datagram is not: decode
		// it at its length on the wire (the bytes not captured read as
		// zero) and show only the fields the capture holds
		datagram = make([]byte, int(udp.Length)-8)
		copy(datagram, frame[off+8:])
	}
	ib, err := ibt.Decode(datagram, off+8)
	if ib == nil {
		p.Error = err.Error()
		p.Summary = p.Error
		return p
	}
	p.IB = ib
	if err != nil {
		p.Error = err.Error()
	}
	p.DestQP, p.Opcode, p.OpName, p.Service = ib.DestQP, uint8(ib.Opcode), ib.Opcode.Operation(), ib.Opcode.Service()
	p.PSN, p.AckReq, p.PayloadLen = ib.PSN, ib.AckReq, ib.PayloadLen
	if ib.AETH != nil {
		p.Syndrome = ib.AETH.Syndrome.String()
		p.SyndromeZh = ib.AETH.Syndrome.StringZh()
		p.NAK = ib.AETH.Syndrome.IsNAK()
	}
	fields := ib.Fields
	if p.Truncated {
		fields = capturedFields(fields, len(frame))
	}
	if ipHdr != nil && !p.Truncated {
		if want, err := ibt.ICRCv4(ipHdr, frame[off:end]); err == nil {
			// the verdict is icrc_ok (and the expected value), worded by
			// the page in its language, not appended here in English
			ok := want == ib.ICRC
			p.ICRCOK = &ok
			if !ok {
				p.ICRCWant = fmt.Sprintf("0x%08x", want)
			}
		}
	}
	p.Fields = append(p.Fields, fields...)
	p.Summary, p.SummaryZh = ib.Summary(), ib.SummaryZh()
	return p
}

// capturedFields keeps the fields within the first n bytes; a payload cut
// by the snap length says how much of it was captured.
func capturedFields(fs []ibt.Field, n int) []ibt.Field {
	var out []ibt.Field
	for _, f := range fs {
		switch {
		case f.Off+f.Len <= n:
			out = append(out, f)
		case f.Header == "Payload" && f.Name == "Data" && f.Off < n:
			f.Text = fmt.Sprintf("%d bytes (first %d captured)", f.Len, n-f.Off)
			f.TextZh = fmt.Sprintf("%d 字节（只抓到前 %d 字节）", f.Len, n-f.Off)
			f.Len = n - f.Off
			out = append(out, f)
		}
	}
	return out
}

func ecnName(v uint8) string {
	switch v {
	case 0:
		return "Not-ECT (0)"
	case 1:
		return "ECT(1)"
	case 2:
		return "ECT(0)"
	}
	return "CE (3): congestion experienced"
}

// ecnNameZh is ecnName for a Chinese page ("" where it reads the same).
func ecnNameZh(v uint8) string {
	if v == 3 {
		return "CE（3）：经历了拥塞"
	}
	return ""
}

func portName(p uint16) string {
	if p == RoCEv2Port {
		return "RoCEv2"
	}
	return "?"
}
