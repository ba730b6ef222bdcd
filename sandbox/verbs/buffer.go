package verbs

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Buffer is memory for an MR, mapped with mmap outside the Go heap: the
// garbage collector never moves or frees it behind the NIC's back, and Close
// returns it to the kernel at a moment we choose (munmap), not at the next GC.
type Buffer struct {
	b []byte
}

// NewBuffer maps size bytes of anonymous, zeroed, page-aligned memory.
func NewBuffer(size int) (*Buffer, error) {
	if size <= 0 {
		return nil, fmt.Errorf("buffer size %d: must be positive", size)
	}
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, &Error{Call: "mmap", Errno: err.(unix.Errno), Detail: fmt.Sprintf("%d bytes", size)}
	}
	return &Buffer{b: b}, nil
}

// Bytes is the mapped memory. It must not be used after Close.
func (b *Buffer) Bytes() []byte { return b.b }

// Len is the buffer's size in bytes.
func (b *Buffer) Len() int { return len(b.b) }

// Addr is the virtual address the NIC sees (the MR's address).
func (b *Buffer) Addr() uint64 {
	if len(b.b) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(&b.b[0])))
}

// Load32 reads the aligned 32-bit word at byte offset off with an atomic
// load, so a loop waiting for a remote WRITE sees the NIC's store instead of
// a value the compiler kept in a register.
func (b *Buffer) Load32(off int) uint32 {
	return atomic.LoadUint32((*uint32)(unsafe.Pointer(&b.b[off&^3])))
}

// Store32 writes the aligned 32-bit word at byte offset off atomically.
func (b *Buffer) Store32(off int, v uint32) {
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&b.b[off&^3])), v)
}

// Close unmaps the memory. Deregister every MR over it first.
func (b *Buffer) Close() error {
	if b == nil || b.b == nil {
		return nil
	}
	err := unix.Munmap(b.b)
	b.b = nil
	if err != nil {
		return &Error{Call: "munmap", Errno: err.(unix.Errno)}
	}
	return nil
}
