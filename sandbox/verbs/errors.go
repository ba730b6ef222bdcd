package verbs

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/rdmalab/rdmalab/internal/errno"
)

// ErrNoVerbs is returned by every call of a binary built without cgo.
var ErrNoVerbs = errors.New("this build has no verbs support (labserver was built with CGO_ENABLED=0; rebuild with cgo and libibverbs-dev)")

// Error is a failed verbs call: the C function that failed and the errno it
// left, captured before anything else could overwrite it.
type Error struct {
	Call  string        // e.g. "ibv_reg_mr"
	Errno syscall.Errno // e.g. ENOMEM
	// Detail is optional context, e.g. "1048576 bytes on rxe0".
	Detail string
}

func (e *Error) Error() string {
	s := e.Call
	if e.Detail != "" {
		s += "(" + e.Detail + ")"
	}
	return fmt.Sprintf("%s: %s (%s)", s, Strerror(e.Errno), ErrnoName(e.Errno))
}

// Unwrap returns the call and errno as an *os.SyscallError, so
// errors.Is(err, syscall.ENOMEM) works and code that names failed system
// calls from an *os.SyscallError (sandbox.ErrorEvent) names the verb.
func (e *Error) Unwrap() error { return &os.SyscallError{Syscall: e.Call, Err: e.Errno} }

// ErrnoName is the symbolic name of an errno ("ENOMEM"), or "errno N";
// Strerror is its text as perror(3) prints it ("Cannot allocate memory").
var (
	ErrnoName = errno.Name
	Strerror  = errno.Strerror
)

func callErr(call string, errno int, detail string) error {
	if errno == 0 {
		return nil
	}
	return &Error{Call: call, Errno: syscall.Errno(errno), Detail: detail}
}

// WCError is a work completion that finished with a status other than
// success: the verbs call itself worked, the operation did not.
type WCError struct {
	WC WC
}

func (e *WCError) Error() string {
	return fmt.Sprintf("work completion %d (%s) failed: %s (%s, vendor_err 0x%x)",
		e.WC.WRID, e.WC.Opcode, e.WC.Status.Description(), e.WC.Status, e.WC.VendorErr)
}

// ErrWaitTimeout is returned by CompChannel.Wait when no event came in time.
var ErrWaitTimeout = errors.New("no completion event in time")
