//go:build cgo

/* beyond.h: the verbs past SEND/WRITE/READ that lesson 07 teaches —
 * atomics, shared receive queues, memory windows, invalidation, async
 * events, multicast attach — and the probes of what the device cannot do
 * (XRC, ODP, device memory, CQ moderation, dma-buf). Same rules as shim.h:
 * libibverbs is dlopen()ed (rlx_load resolves the extra symbols) and every
 * wrapper returns a positive errno, captured before anything overwrites it. */
#ifndef RDMALAB_VERBS_BEYOND_H
#define RDMALAB_VERBS_BEYOND_H

#include <stdint.h>
#include <infiniband/verbs.h>

/* rlx_load resolves the extra symbols (after rl_load); 0 or -1 with msg. */
int rlx_load(char *msg, int msglen);

/* One atomic work request (CMP_AND_SWP or FETCH_AND_ADD): the 8 bytes
 * before the operation land at addr (lkey). */
int rlx_post_atomic(struct ibv_qp *qp, uint64_t wr_id, int opcode, int flags,
                    uint64_t addr, uint32_t lkey, uint64_t remote_addr, uint32_t rkey,
                    uint64_t compare_add, uint64_t swap);

struct ibv_srq *rlx_create_srq(struct ibv_pd *pd, uint32_t max_wr, int *err);
int rlx_arm_srq(struct ibv_srq *srq, uint32_t limit);
int rlx_query_srq(struct ibv_srq *srq, uint32_t *max_wr, uint32_t *limit);
int rlx_destroy_srq(struct ibv_srq *srq);
int rlx_post_srq_recv(struct ibv_srq *srq, uint64_t wr_id, uint64_t addr, uint32_t len, uint32_t lkey);
/* An RC QP whose receives come from srq (no receive queue of its own). */
struct ibv_qp *rlx_create_qp_srq(struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq,
                                 struct ibv_srq *srq, uint32_t max_send_wr, int *err);

/* Async events: the context's async_fd (made non-blocking by the caller)
 * and one event read and acknowledged at once. */
int rlx_async_fd(struct ibv_context *ctx);
struct rlx_event {
	int type;          /* enum ibv_event_type */
	uint32_t qp_num;   /* QP-affiliated events */
	int port;          /* port events */
	int element;       /* 0 none, 1 QP, 2 CQ, 3 SRQ, 4 port, 5 device */
	uintptr_t handle;  /* the QP/CQ/SRQ pointer, to name it on the Go side */
};
int rlx_get_async_event(struct ibv_context *ctx, struct rlx_event *out);

/* Memory windows. */
struct ibv_mw *rlx_alloc_mw(struct ibv_pd *pd, int type, int *err);
int rlx_dealloc_mw(struct ibv_mw *mw);
uint32_t rlx_mw_rkey(struct ibv_mw *mw);
uint32_t rlx_inc_rkey(uint32_t rkey);
int rlx_post_bind_mw(struct ibv_qp *qp, uint64_t wr_id, struct ibv_mw *mw, uint32_t new_rkey,
                     struct ibv_mr *mr, uint64_t addr, uint64_t len, int access);
int rlx_post_local_inv(struct ibv_qp *qp, uint64_t wr_id, uint32_t rkey);
int rlx_post_send_inv(struct ibv_qp *qp, uint64_t wr_id, uint64_t addr, uint32_t len, uint32_t lkey, uint32_t inv_rkey);
/* The invalidated rkey of a receive completion with IBV_WC_WITH_INV. */
int rlx_poll_inv(struct ibv_cq *cq, uint64_t *wr_id, int *status, int *flags, uint32_t *inv_rkey);

/* Multicast: attach/detach a UD QP to a multicast GID. */
int rlx_attach_mcast(struct ibv_qp *qp, const uint8_t *gid, uint16_t lid);
int rlx_detach_mcast(struct ibv_qp *qp, const uint8_t *gid, uint16_t lid);

/* What the device says about itself (ibv_query_device_ex). */
struct rlx_caps {
	uint64_t device_cap_flags;
	int atomic_cap;
	int max_qp_rd_atom, max_qp_init_rd_atom, max_res_rd_atom;
	int max_srq, max_srq_wr, max_mw;
	int max_mcast_grp, max_mcast_qp_attach;
	uint32_t odp_general_caps, odp_rc_caps;
	uint64_t max_dm_size;
	int cq_mod_max_count, cq_mod_max_period;
	int ex; /* 1 when query_device_ex answered, 0 when only the legacy query did */
};
int rlx_query_caps(struct ibv_context *ctx, struct rlx_caps *out);

/* Probes: each tries the feature once and returns the errno (0 = it worked,
 * and what it made is freed again). */
int rlx_try_xrcd(struct ibv_context *ctx);
int rlx_try_dm(struct ibv_context *ctx, size_t len);
int rlx_try_cq_moderation(struct ibv_cq *cq);
int rlx_try_odp(struct ibv_pd *pd, void *addr, size_t len);
int rlx_try_dmabuf(struct ibv_pd *pd);

#endif
