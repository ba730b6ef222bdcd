package ibt

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
)

// ICRCv4 computes the invariant CRC of a RoCEv2 packet over IPv4 (IBTA
// annex A17.3.3): a CRC-32 over 8 bytes of 0xff (the masked place of an
// LRH), the IPv4 header with its variant fields (DSCP/ECN, TTL, header
// checksum) set to all ones, the UDP header with its checksum set to all
// ones, the BTH with its reserved byte 4 (FECN/BECN) set to all ones, and
// the rest of the packet up to the ICRC. ip is the IPv4 header, udp the UDP
// datagram (header + payload, ICRC included). The result is the value as
// it sits on the wire, read big-endian like Packet.ICRC.
func ICRCv4(ip, udp []byte) (uint32, error) {
	if len(ip) < 20 || len(udp) < 8+sizeBTH+sizeICRC {
		return 0, errors.New("ibt: ICRC needs an IPv4 header and a UDP datagram holding a BTH and an ICRC")
	}
	buf := make([]byte, 0, 8+len(ip)+len(udp))
	buf = append(buf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	h := len(buf)
	buf = append(buf, ip...)
	buf[h+1] = 0xff                   // DSCP + ECN
	buf[h+8] = 0xff                   // TTL
	buf[h+10], buf[h+11] = 0xff, 0xff // header checksum
	u := len(buf)
	buf = append(buf, udp[:len(udp)-sizeICRC]...)
	buf[u+6], buf[u+7] = 0xff, 0xff // UDP checksum
	buf[u+8+4] = 0xff               // BTH reserved byte with FECN/BECN
	sum := crc32.ChecksumIEEE(buf)
	// The CRC goes on the wire least significant byte first.
	var le [4]byte
	binary.LittleEndian.PutUint32(le[:], sum)
	return binary.BigEndian.Uint32(le[:]), nil
}
