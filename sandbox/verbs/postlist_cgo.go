//go:build cgo

package verbs

/*
#include <errno.h>
#include <endian.h>
#include <stdint.h>
#include <infiniband/verbs.h>

// rl_wr is one work request of a post list, flat so Go can fill an array
// of them without handing C a Go pointer.
struct rl_wr {
	uint64_t id, addr, raddr;
	uint32_t len, lkey, rkey, imm;
	int opcode, flags;
};

enum { RL_MAX_POST_LIST = 64 };

// rl_post_send_list chains n work requests (at most one SGE each) into one
// list and hands it to a single ibv_post_send call: one doorbell for the
// whole list. It returns the errno of a refused post (0 when all went) and
// sets *bad to the index of the request the provider stopped at.
static int rl_post_send_list(struct ibv_qp *qp, const struct rl_wr *in, int n, int *bad) {
	struct ibv_send_wr wr[RL_MAX_POST_LIST];
	struct ibv_sge sge[RL_MAX_POST_LIST];
	struct ibv_send_wr *badwr = NULL;
	int i, rc;
	*bad = -1;
	if (n < 1 || n > RL_MAX_POST_LIST)
		return EINVAL;
	for (i = 0; i < n; i++) {
		struct ibv_send_wr *w = &wr[i];
		*w = (struct ibv_send_wr){0};
		sge[i] = (struct ibv_sge){ .addr = in[i].addr, .length = in[i].len, .lkey = in[i].lkey };
		w->wr_id = in[i].id;
		w->opcode = (enum ibv_wr_opcode)in[i].opcode;
		w->send_flags = (unsigned int)in[i].flags;
		if (in[i].len > 0) { w->sg_list = &sge[i]; w->num_sge = 1; }
		w->wr.rdma.remote_addr = in[i].raddr;
		w->wr.rdma.rkey = in[i].rkey;
		w->imm_data = htobe32(in[i].imm);
		w->next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	errno = 0;
	rc = ibv_post_send(qp, wr, &badwr);
	if (rc != 0 && badwr != NULL)
		*bad = (int)(badwr - wr);
	if (rc < 0)
		rc = errno ? errno : -rc;
	return rc;
}
*/
import "C"

import "fmt"

// MaxPostList is the longest list PostSendList takes in one call.
const MaxPostList = int(C.RL_MAX_POST_LIST)

// PostSendList posts wrs as one linked list in a single ibv_post_send
// call, so the provider rings the doorbell once for all of them (on
// Soft-RoCE: one write() on the uverbs file; on mlx5: one doorbell store).
// posted is how many the provider accepted before it refused one.
func (qp *QP) PostSendList(wrs []SendWR) (posted int, err error) {
	if len(wrs) == 0 || len(wrs) > MaxPostList {
		return 0, fmt.Errorf("ibv_post_send: a post list of %d work requests (1..%d)", len(wrs), MaxPostList)
	}
	in := make([]C.struct_rl_wr, len(wrs))
	for i, wr := range wrs {
		w := &in[i]
		w.id, w.opcode, w.flags = C.uint64_t(wr.ID), C.int(wr.Op), C.int(wr.Flags)
		if wr.MR != nil && wr.Length > 0 {
			w.addr, w.lkey = C.uint64_t(wr.MR.addr+uint64(wr.Offset)), C.uint32_t(wr.MR.lkey)
		}
		w.len, w.raddr, w.rkey, w.imm = C.uint32_t(wr.Length), C.uint64_t(wr.RemoteAddr), C.uint32_t(wr.RKey), C.uint32_t(wr.Imm)
	}
	var bad C.int
	e := C.rl_post_send_list(qp.qp, &in[0], C.int(len(in)), &bad)
	if e == 0 {
		return len(wrs), nil
	}
	posted = 0
	if bad >= 0 {
		posted = int(bad)
	}
	return posted, callErr("ibv_post_send", int(e), fmt.Sprintf("post list of %d", len(wrs)))
}
