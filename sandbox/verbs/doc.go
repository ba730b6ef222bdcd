// Package verbs is rdmalab's small binding over libibverbs, the user-space
// RDMA API: devices, protection domains, memory regions over buffers that live
// outside the Go heap, completion queues (polled or with a completion
// channel), RC queue pairs and their state machine, posting work requests and
// polling completions, plus the out-of-band TCP exchange of QP numbers, GIDs,
// addresses and rkeys that perftest uses.
//
// It is the only package of rdmalab that uses cgo. libibverbs.so.1 is loaded
// with dlopen at the first call rather than linked, so a labserver binary
// built with cgo starts on a machine without rdma-core and only the RDMA
// experiments fail, with a message naming the library. Built with
// CGO_ENABLED=0 every call returns ErrNoVerbs.
//
// Every C resource has a Go owner with a Close method; Close is idempotent and
// frees in the order libibverbs requires when the caller closes owners in
// reverse creation order (QP, MR, CQ, channel, PD, context).
package verbs
