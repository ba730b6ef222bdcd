package verbs

import "encoding/binary"

// beToHost converts a big-endian (network order) 32-bit value as stored in
// memory into a host-order value.
func beToHost(v uint32) uint32 {
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], v)
	return binary.BigEndian.Uint32(b[:])
}
