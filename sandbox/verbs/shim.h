//go:build cgo

/* shim.h: the C side of package verbs. libibverbs is dlopen()ed at the first
 * call instead of linked, so a labserver binary built with cgo still starts
 * (and serves lessons) on a machine without rdma-core; only the RDMA
 * experiments then fail, with a message naming the missing library.
 * Every wrapper returns the errno of the failed call through *err (or as its
 * result), captured before any other libc call can overwrite it. */
#ifndef RDMALAB_VERBS_SHIM_H
#define RDMALAB_VERBS_SHIM_H

#include <stdint.h>
#include <infiniband/verbs.h>

/* rl_load opens libibverbs.so.1 and resolves the symbols; 0 on success,
 * otherwise -1 with a message in msg. Safe to call more than once. */
int rl_load(char *msg, int msglen);

struct ibv_device **rl_get_device_list(int *num, int *err);
void rl_free_device_list(struct ibv_device **list);
const char *rl_device_name(struct ibv_device **list, int i);
struct ibv_context *rl_open_device(struct ibv_device **list, int i, int *err);
int rl_close_device(struct ibv_context *ctx);
int rl_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr);
int rl_query_device(struct ibv_context *ctx, struct ibv_device_attr *attr);
int rl_query_gid(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid);

struct ibv_pd *rl_alloc_pd(struct ibv_context *ctx, int *err);
int rl_dealloc_pd(struct ibv_pd *pd);
struct ibv_mr *rl_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access, int *err);
int rl_dereg_mr(struct ibv_mr *mr);

struct ibv_comp_channel *rl_create_comp_channel(struct ibv_context *ctx, int *err);
int rl_destroy_comp_channel(struct ibv_comp_channel *ch);
struct ibv_cq *rl_create_cq(struct ibv_context *ctx, int cqe, struct ibv_comp_channel *ch, int *err);
int rl_destroy_cq(struct ibv_cq *cq);
int rl_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int rl_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq);
void rl_ack_cq_events(struct ibv_cq *cq, unsigned int n);
/* rl_poll_cq returns the number of completions, or -errno. */
int rl_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);

struct ibv_qp *rl_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr, int *err);
int rl_destroy_qp(struct ibv_qp *qp);
int rl_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
int rl_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask, struct ibv_qp_init_attr *init);

/* One work request with at most one scatter/gather element (len 0 = none). */
int rl_post_send(struct ibv_qp *qp, uint64_t wr_id, int opcode, int flags,
                 uint64_t addr, uint32_t len, uint32_t lkey,
                 uint64_t remote_addr, uint32_t rkey, uint32_t imm);
int rl_post_recv(struct ibv_qp *qp, uint64_t wr_id, uint64_t addr, uint32_t len, uint32_t lkey);

/* UD: an address handle names the destination of each datagram. */
struct ibv_ah *rl_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr, int *err);
int rl_destroy_ah(struct ibv_ah *ah);
int rl_post_send_ud(struct ibv_qp *qp, uint64_t wr_id, int flags,
                    uint64_t addr, uint32_t len, uint32_t lkey,
                    struct ibv_ah *ah, uint32_t remote_qpn, uint32_t remote_qkey);

#endif
