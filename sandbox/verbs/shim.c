//go:build cgo

#include "shim.h"

#include <dlfcn.h>
#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* Function pointers resolved from libibverbs.so.1. The header's macros
 * (ibv_reg_mr, ibv_query_port, ibv_get_device_list) wrap these symbols. */
static struct {
	struct ibv_device **(*get_device_list)(int *);
	void (*free_device_list)(struct ibv_device **);
	const char *(*get_device_name)(struct ibv_device *);
	struct ibv_context *(*open_device)(struct ibv_device *);
	int (*close_device)(struct ibv_context *);
	int (*query_device)(struct ibv_context *, struct ibv_device_attr *);
	int (*query_port)(struct ibv_context *, uint8_t, struct _compat_ibv_port_attr *);
	int (*query_gid)(struct ibv_context *, uint8_t, int, union ibv_gid *);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *);
	int (*dealloc_pd)(struct ibv_pd *);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *, void *, size_t, int);
	int (*dereg_mr)(struct ibv_mr *);
	struct ibv_comp_channel *(*create_comp_channel)(struct ibv_context *);
	int (*destroy_comp_channel)(struct ibv_comp_channel *);
	struct ibv_cq *(*create_cq)(struct ibv_context *, int, void *, struct ibv_comp_channel *, int);
	int (*destroy_cq)(struct ibv_cq *);
	int (*get_cq_event)(struct ibv_comp_channel *, struct ibv_cq **, void **);
	void (*ack_cq_events)(struct ibv_cq *, unsigned int);
	struct ibv_qp *(*create_qp)(struct ibv_pd *, struct ibv_qp_init_attr *);
	int (*destroy_qp)(struct ibv_qp *);
	int (*modify_qp)(struct ibv_qp *, struct ibv_qp_attr *, int);
	int (*query_qp)(struct ibv_qp *, struct ibv_qp_attr *, int, struct ibv_qp_init_attr *);
	struct ibv_ah *(*create_ah)(struct ibv_pd *, struct ibv_ah_attr *);
	int (*destroy_ah)(struct ibv_ah *);
} F;

static pthread_mutex_t load_mu = PTHREAD_MUTEX_INITIALIZER;
static int loaded;            /* 1 ok, -1 failed */
static char load_msg[512];

#define SYM(field, name) do { \
	*(void **)(&F.field) = dlsym(h, name); \
	if (!F.field) { snprintf(load_msg, sizeof load_msg, "libibverbs.so.1 lacks %s: %s", name, dlerror()); goto fail; } \
} while (0)

int rl_load(char *msg, int msglen) {
	pthread_mutex_lock(&load_mu);
	if (!loaded) {
		void *h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_GLOBAL);
		if (!h) {
			snprintf(load_msg, sizeof load_msg, "%s", dlerror());
			loaded = -1;
		} else {
			SYM(get_device_list, "ibv_get_device_list");
			SYM(free_device_list, "ibv_free_device_list");
			SYM(get_device_name, "ibv_get_device_name");
			SYM(open_device, "ibv_open_device");
			SYM(close_device, "ibv_close_device");
			SYM(query_device, "ibv_query_device");
			SYM(query_port, "ibv_query_port");
			SYM(query_gid, "ibv_query_gid");
			SYM(alloc_pd, "ibv_alloc_pd");
			SYM(dealloc_pd, "ibv_dealloc_pd");
			SYM(reg_mr, "ibv_reg_mr");
			SYM(dereg_mr, "ibv_dereg_mr");
			SYM(create_comp_channel, "ibv_create_comp_channel");
			SYM(destroy_comp_channel, "ibv_destroy_comp_channel");
			SYM(create_cq, "ibv_create_cq");
			SYM(destroy_cq, "ibv_destroy_cq");
			SYM(get_cq_event, "ibv_get_cq_event");
			SYM(ack_cq_events, "ibv_ack_cq_events");
			SYM(create_qp, "ibv_create_qp");
			SYM(destroy_qp, "ibv_destroy_qp");
			SYM(modify_qp, "ibv_modify_qp");
			SYM(query_qp, "ibv_query_qp");
			SYM(create_ah, "ibv_create_ah");
			SYM(destroy_ah, "ibv_destroy_ah");
			loaded = 1;
			goto done;
fail:
			loaded = -1;
		}
	}
done:
	pthread_mutex_unlock(&load_mu);
	if (loaded < 0) {
		snprintf(msg, msglen, "%s", load_msg);
		return -1;
	}
	return 0;
}

/* Some verbs return an errno value, others -1 with errno set, older
 * providers a negative errno: normalise to a positive errno. */
static int errno_of(int rc) {
	if (rc == 0) return 0;
	if (rc > 0) return rc;
	if (rc < -1) return -rc;
	return errno ? errno : EIO;
}

struct ibv_device **rl_get_device_list(int *num, int *err) {
	errno = 0;
	struct ibv_device **l = F.get_device_list(num);
	*err = l ? 0 : (errno ? errno : ENODEV);
	return l;
}

void rl_free_device_list(struct ibv_device **list) { F.free_device_list(list); }

const char *rl_device_name(struct ibv_device **list, int i) { return F.get_device_name(list[i]); }

struct ibv_context *rl_open_device(struct ibv_device **list, int i, int *err) {
	errno = 0;
	struct ibv_context *c = F.open_device(list[i]);
	*err = c ? 0 : (errno ? errno : ENODEV);
	return c;
}

int rl_close_device(struct ibv_context *ctx) { errno = 0; return errno_of(F.close_device(ctx)); }

int rl_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr) {
	/* the same dance as the header's ___ibv_query_port */
	struct verbs_context *vctx = verbs_get_ctx_op(ctx, query_port);
	errno = 0;
	if (!vctx) {
		memset(attr, 0, sizeof *attr);
		return errno_of(F.query_port(ctx, port, (struct _compat_ibv_port_attr *)attr));
	}
	return errno_of(vctx->query_port(ctx, port, attr, sizeof *attr));
}

int rl_query_device(struct ibv_context *ctx, struct ibv_device_attr *attr) {
	errno = 0;
	return errno_of(F.query_device(ctx, attr));
}

int rl_query_gid(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid) {
	errno = 0;
	return errno_of(F.query_gid(ctx, port, index, gid));
}

struct ibv_pd *rl_alloc_pd(struct ibv_context *ctx, int *err) {
	errno = 0;
	struct ibv_pd *pd = F.alloc_pd(ctx);
	*err = pd ? 0 : (errno ? errno : ENOMEM);
	return pd;
}

int rl_dealloc_pd(struct ibv_pd *pd) { errno = 0; return errno_of(F.dealloc_pd(pd)); }

struct ibv_mr *rl_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access, int *err) {
	errno = 0;
	struct ibv_mr *mr = F.reg_mr(pd, addr, len, access);
	*err = mr ? 0 : (errno ? errno : ENOMEM);
	return mr;
}

int rl_dereg_mr(struct ibv_mr *mr) { errno = 0; return errno_of(F.dereg_mr(mr)); }

struct ibv_comp_channel *rl_create_comp_channel(struct ibv_context *ctx, int *err) {
	errno = 0;
	struct ibv_comp_channel *ch = F.create_comp_channel(ctx);
	*err = ch ? 0 : (errno ? errno : ENOMEM);
	return ch;
}

int rl_destroy_comp_channel(struct ibv_comp_channel *ch) { errno = 0; return errno_of(F.destroy_comp_channel(ch)); }

struct ibv_cq *rl_create_cq(struct ibv_context *ctx, int cqe, struct ibv_comp_channel *ch, int *err) {
	errno = 0;
	struct ibv_cq *cq = F.create_cq(ctx, cqe, NULL, ch, 0);
	*err = cq ? 0 : (errno ? errno : ENOMEM);
	return cq;
}

int rl_destroy_cq(struct ibv_cq *cq) { errno = 0; return errno_of(F.destroy_cq(cq)); }

int rl_req_notify_cq(struct ibv_cq *cq, int solicited_only) {
	errno = 0;
	return errno_of(ibv_req_notify_cq(cq, solicited_only));
}

int rl_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq) {
	void *cq_ctx;
	errno = 0;
	return errno_of(F.get_cq_event(ch, cq, &cq_ctx));
}

void rl_ack_cq_events(struct ibv_cq *cq, unsigned int n) { F.ack_cq_events(cq, n); }

int rl_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc) {
	errno = 0;
	int rc = ibv_poll_cq(cq, n, wc);
	if (rc >= 0) return rc;
	return -errno_of(rc);
}

struct ibv_qp *rl_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr, int *err) {
	errno = 0;
	struct ibv_qp *qp = F.create_qp(pd, attr);
	*err = qp ? 0 : (errno ? errno : ENOMEM);
	return qp;
}

int rl_destroy_qp(struct ibv_qp *qp) { errno = 0; return errno_of(F.destroy_qp(qp)); }

int rl_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask) {
	errno = 0;
	return errno_of(F.modify_qp(qp, attr, mask));
}

int rl_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask, struct ibv_qp_init_attr *init) {
	errno = 0;
	return errno_of(F.query_qp(qp, attr, mask, init));
}

int rl_post_send(struct ibv_qp *qp, uint64_t wr_id, int opcode, int flags,
                 uint64_t addr, uint32_t len, uint32_t lkey,
                 uint64_t remote_addr, uint32_t rkey, uint32_t imm) {
	struct ibv_sge sge = { .addr = addr, .length = len, .lkey = lkey };
	struct ibv_send_wr wr = {0}, *bad = NULL;
	wr.wr_id = wr_id;
	wr.opcode = (enum ibv_wr_opcode)opcode;
	wr.send_flags = (unsigned int)flags;
	if (len > 0) { wr.sg_list = &sge; wr.num_sge = 1; }
	wr.wr.rdma.remote_addr = remote_addr;
	wr.wr.rdma.rkey = rkey;
	wr.imm_data = htobe32(imm);
	errno = 0;
	return errno_of(ibv_post_send(qp, &wr, &bad));
}

int rl_post_recv(struct ibv_qp *qp, uint64_t wr_id, uint64_t addr, uint32_t len, uint32_t lkey) {
	struct ibv_sge sge = { .addr = addr, .length = len, .lkey = lkey };
	struct ibv_recv_wr wr = {0}, *bad = NULL;
	wr.wr_id = wr_id;
	if (len > 0) { wr.sg_list = &sge; wr.num_sge = 1; }
	errno = 0;
	return errno_of(ibv_post_recv(qp, &wr, &bad));
}


struct ibv_ah *rl_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr, int *err) {
	errno = 0;
	struct ibv_ah *ah = F.create_ah(pd, attr);
	*err = ah ? 0 : (errno ? errno : EINVAL);
	return ah;
}

int rl_destroy_ah(struct ibv_ah *ah) { errno = 0; return errno_of(F.destroy_ah(ah)); }

int rl_post_send_ud(struct ibv_qp *qp, uint64_t wr_id, int flags,
                    uint64_t addr, uint32_t len, uint32_t lkey,
                    struct ibv_ah *ah, uint32_t remote_qpn, uint32_t remote_qkey) {
	struct ibv_sge sge = { .addr = addr, .length = len, .lkey = lkey };
	struct ibv_send_wr wr = {0}, *bad = NULL;
	wr.wr_id = wr_id;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = (unsigned int)flags;
	if (len > 0) { wr.sg_list = &sge; wr.num_sge = 1; }
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = remote_qpn;
	wr.wr.ud.remote_qkey = remote_qkey;
	errno = 0;
	return errno_of(ibv_post_send(qp, &wr, &bad));
}
