//go:build cgo

#include "beyond.h"
#include "shim.h"

#include <dlfcn.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* The exported libibverbs symbols these verbs need beyond shim.c's; the
 * rest (alloc_mw, post_srq_recv, open_xrcd, alloc_dm, modify_cq,
 * query_device_ex) are inline in <infiniband/verbs.h> and go through the
 * provider's ops table, so they need no symbol. */
static struct {
	struct ibv_srq *(*create_srq)(struct ibv_pd *, struct ibv_srq_init_attr *);
	int (*modify_srq)(struct ibv_srq *, struct ibv_srq_attr *, int);
	int (*query_srq)(struct ibv_srq *, struct ibv_srq_attr *);
	int (*destroy_srq)(struct ibv_srq *);
	int (*get_async_event)(struct ibv_context *, struct ibv_async_event *);
	void (*ack_async_event)(struct ibv_async_event *);
	int (*attach_mcast)(struct ibv_qp *, const union ibv_gid *, uint16_t);
	int (*detach_mcast)(struct ibv_qp *, const union ibv_gid *, uint16_t);
	struct ibv_qp *(*create_qp)(struct ibv_pd *, struct ibv_qp_init_attr *);
	int (*query_device)(struct ibv_context *, struct ibv_device_attr *);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *, void *, size_t, int);
	int (*dereg_mr)(struct ibv_mr *);
	/* optional: older libibverbs lacks it */
	struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *, uint64_t, size_t, uint64_t, int, int);
} X;

static pthread_mutex_t xload_mu = PTHREAD_MUTEX_INITIALIZER;
static int xloaded;
static char xload_msg[512];

#define XSYM(field, name) do { \
	*(void **)(&X.field) = dlsym(h, name); \
	if (!X.field) { snprintf(xload_msg, sizeof xload_msg, "libibverbs.so.1 lacks %s: %s", name, dlerror()); goto fail; } \
} while (0)

int rlx_load(char *msg, int msglen) {
	if (rl_load(msg, msglen) != 0) return -1;
	pthread_mutex_lock(&xload_mu);
	if (!xloaded) {
		/* rl_load opened it; this only takes another reference */
		void *h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_GLOBAL);
		if (!h) {
			snprintf(xload_msg, sizeof xload_msg, "%s", dlerror());
			xloaded = -1;
		} else {
			XSYM(create_srq, "ibv_create_srq");
			XSYM(modify_srq, "ibv_modify_srq");
			XSYM(query_srq, "ibv_query_srq");
			XSYM(destroy_srq, "ibv_destroy_srq");
			XSYM(get_async_event, "ibv_get_async_event");
			XSYM(ack_async_event, "ibv_ack_async_event");
			XSYM(attach_mcast, "ibv_attach_mcast");
			XSYM(detach_mcast, "ibv_detach_mcast");
			XSYM(create_qp, "ibv_create_qp");
			XSYM(query_device, "ibv_query_device");
			XSYM(reg_mr, "ibv_reg_mr");
			XSYM(dereg_mr, "ibv_dereg_mr");
			*(void **)(&X.reg_dmabuf_mr) = dlsym(h, "ibv_reg_dmabuf_mr");
			xloaded = 1;
			goto done;
fail:
			xloaded = -1;
		}
	}
done:
	pthread_mutex_unlock(&xload_mu);
	if (xloaded < 0) {
		snprintf(msg, msglen, "%s", xload_msg);
		return -1;
	}
	return 0;
}

static int xerrno_of(int rc) {
	if (rc == 0) return 0;
	if (rc > 0) return rc;
	if (rc < -1) return -rc;
	return errno ? errno : EIO;
}

int rlx_post_atomic(struct ibv_qp *qp, uint64_t wr_id, int opcode, int flags,
                    uint64_t addr, uint32_t lkey, uint64_t remote_addr, uint32_t rkey,
                    uint64_t compare_add, uint64_t swap) {
	struct ibv_sge sge = { .addr = addr, .length = 8, .lkey = lkey };
	struct ibv_send_wr wr = {0}, *bad = NULL;
	wr.wr_id = wr_id;
	wr.opcode = (enum ibv_wr_opcode)opcode;
	wr.send_flags = (unsigned int)flags;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.atomic.remote_addr = remote_addr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	errno = 0;
	return xerrno_of(ibv_post_send(qp, &wr, &bad));
}

struct ibv_srq *rlx_create_srq(struct ibv_pd *pd, uint32_t max_wr, int *err) {
	struct ibv_srq_init_attr a = {0};
	a.attr.max_wr = max_wr;
	a.attr.max_sge = 1;
	errno = 0;
	struct ibv_srq *s = X.create_srq(pd, &a);
	*err = s ? 0 : (errno ? errno : ENOMEM);
	return s;
}

int rlx_arm_srq(struct ibv_srq *srq, uint32_t limit) {
	struct ibv_srq_attr a = {0};
	a.srq_limit = limit;
	errno = 0;
	return xerrno_of(X.modify_srq(srq, &a, IBV_SRQ_LIMIT));
}

int rlx_query_srq(struct ibv_srq *srq, uint32_t *max_wr, uint32_t *limit) {
	struct ibv_srq_attr a = {0};
	errno = 0;
	int rc = xerrno_of(X.query_srq(srq, &a));
	*max_wr = a.max_wr;
	*limit = a.srq_limit;
	return rc;
}

int rlx_destroy_srq(struct ibv_srq *srq) { errno = 0; return xerrno_of(X.destroy_srq(srq)); }

int rlx_post_srq_recv(struct ibv_srq *srq, uint64_t wr_id, uint64_t addr, uint32_t len, uint32_t lkey) {
	struct ibv_sge sge = { .addr = addr, .length = len, .lkey = lkey };
	struct ibv_recv_wr wr = {0}, *bad = NULL;
	wr.wr_id = wr_id;
	if (len > 0) { wr.sg_list = &sge; wr.num_sge = 1; }
	errno = 0;
	return xerrno_of(ibv_post_srq_recv(srq, &wr, &bad));
}

struct ibv_qp *rlx_create_qp_srq(struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq,
                                 struct ibv_srq *srq, uint32_t max_send_wr, int *err) {
	struct ibv_qp_init_attr a = {0};
	a.send_cq = scq;
	a.recv_cq = rcq;
	a.srq = srq;
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = max_send_wr;
	a.cap.max_send_sge = 1;
	errno = 0;
	struct ibv_qp *qp = X.create_qp(pd, &a);
	*err = qp ? 0 : (errno ? errno : ENOMEM);
	return qp;
}

int rlx_async_fd(struct ibv_context *ctx) { return ctx->async_fd; }

int rlx_get_async_event(struct ibv_context *ctx, struct rlx_event *out) {
	struct ibv_async_event ev;
	memset(out, 0, sizeof *out);
	errno = 0;
	int rc = X.get_async_event(ctx, &ev);
	if (rc != 0) return xerrno_of(rc);
	out->type = ev.event_type;
	switch (ev.event_type) {
	case IBV_EVENT_QP_FATAL: case IBV_EVENT_QP_REQ_ERR: case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST: case IBV_EVENT_SQ_DRAINED: case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR: case IBV_EVENT_QP_LAST_WQE_REACHED:
		out->element = 1;
		out->qp_num = ev.element.qp->qp_num;
		out->handle = (uintptr_t)ev.element.qp;
		break;
	case IBV_EVENT_CQ_ERR:
		out->element = 2;
		out->handle = (uintptr_t)ev.element.cq;
		break;
	case IBV_EVENT_SRQ_ERR: case IBV_EVENT_SRQ_LIMIT_REACHED:
		out->element = 3;
		out->handle = (uintptr_t)ev.element.srq;
		break;
	case IBV_EVENT_PORT_ACTIVE: case IBV_EVENT_PORT_ERR: case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_PKEY_CHANGE: case IBV_EVENT_SM_CHANGE: case IBV_EVENT_CLIENT_REREGISTER:
	case IBV_EVENT_GID_CHANGE:
		out->element = 4;
		out->port = ev.element.port_num;
		break;
	default:
		out->element = 5;
	}
	X.ack_async_event(&ev);
	return 0;
}

struct ibv_mw *rlx_alloc_mw(struct ibv_pd *pd, int type, int *err) {
	errno = 0;
	struct ibv_mw *mw = ibv_alloc_mw(pd, (enum ibv_mw_type)type);
	*err = mw ? 0 : (errno ? errno : EOPNOTSUPP);
	return mw;
}

int rlx_dealloc_mw(struct ibv_mw *mw) { errno = 0; return xerrno_of(ibv_dealloc_mw(mw)); }

uint32_t rlx_mw_rkey(struct ibv_mw *mw) { return mw->rkey; }

uint32_t rlx_inc_rkey(uint32_t rkey) { return ibv_inc_rkey(rkey); }

int rlx_post_bind_mw(struct ibv_qp *qp, uint64_t wr_id, struct ibv_mw *mw, uint32_t new_rkey,
                     struct ibv_mr *mr, uint64_t addr, uint64_t len, int access) {
	struct ibv_send_wr wr = {0}, *bad = NULL;
	wr.wr_id = wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = new_rkey;
	wr.bind_mw.bind_info.mr = mr;
	wr.bind_mw.bind_info.addr = addr;
	wr.bind_mw.bind_info.length = len;
	wr.bind_mw.bind_info.mw_access_flags = (unsigned int)access;
	errno = 0;
	return xerrno_of(ibv_post_send(qp, &wr, &bad));
}

int rlx_post_local_inv(struct ibv_qp *qp, uint64_t wr_id, uint32_t rkey) {
	struct ibv_send_wr wr = {0}, *bad = NULL;
	wr.wr_id = wr_id;
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.invalidate_rkey = rkey;
	errno = 0;
	return xerrno_of(ibv_post_send(qp, &wr, &bad));
}

int rlx_post_send_inv(struct ibv_qp *qp, uint64_t wr_id, uint64_t addr, uint32_t len, uint32_t lkey, uint32_t inv_rkey) {
	struct ibv_sge sge = { .addr = addr, .length = len, .lkey = lkey };
	struct ibv_send_wr wr = {0}, *bad = NULL;
	wr.wr_id = wr_id;
	wr.opcode = IBV_WR_SEND_WITH_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (len > 0) { wr.sg_list = &sge; wr.num_sge = 1; }
	wr.invalidate_rkey = inv_rkey;
	errno = 0;
	return xerrno_of(ibv_post_send(qp, &wr, &bad));
}

int rlx_poll_inv(struct ibv_cq *cq, uint64_t *wr_id, int *status, int *flags, uint32_t *inv_rkey) {
	struct ibv_wc wc;
	errno = 0;
	int rc = ibv_poll_cq(cq, 1, &wc);
	if (rc < 0) return -xerrno_of(rc);
	if (rc == 0) return 0;
	*wr_id = wc.wr_id;
	*status = wc.status;
	*flags = (int)wc.wc_flags;
	*inv_rkey = wc.invalidated_rkey;
	return 1;
}

int rlx_attach_mcast(struct ibv_qp *qp, const uint8_t *gid, uint16_t lid) {
	union ibv_gid g;
	memcpy(g.raw, gid, 16);
	errno = 0;
	return xerrno_of(X.attach_mcast(qp, &g, lid));
}

int rlx_detach_mcast(struct ibv_qp *qp, const uint8_t *gid, uint16_t lid) {
	union ibv_gid g;
	memcpy(g.raw, gid, 16);
	errno = 0;
	return xerrno_of(X.detach_mcast(qp, &g, lid));
}

int rlx_query_caps(struct ibv_context *ctx, struct rlx_caps *out) {
	struct ibv_device_attr_ex a;
	memset(&a, 0, sizeof a);
	memset(out, 0, sizeof *out);
	struct verbs_context *vctx = verbs_get_ctx_op(ctx, query_device_ex);
	int rc = EOPNOTSUPP;
	if (vctx) {
		errno = 0;
		rc = xerrno_of(vctx->query_device_ex(ctx, NULL, &a, sizeof a));
	}
	if (rc == 0) {
		out->ex = 1;
	} else {
		memset(&a, 0, sizeof a);
		errno = 0;
		rc = xerrno_of(X.query_device(ctx, &a.orig_attr));
		if (rc) return rc;
	}
	out->device_cap_flags = (uint64_t)a.orig_attr.device_cap_flags | a.device_cap_flags_ex;
	out->atomic_cap = a.orig_attr.atomic_cap;
	out->max_qp_rd_atom = a.orig_attr.max_qp_rd_atom;
	out->max_qp_init_rd_atom = a.orig_attr.max_qp_init_rd_atom;
	out->max_res_rd_atom = a.orig_attr.max_res_rd_atom;
	out->max_srq = a.orig_attr.max_srq;
	out->max_srq_wr = a.orig_attr.max_srq_wr;
	out->max_mw = a.orig_attr.max_mw;
	out->max_mcast_grp = a.orig_attr.max_mcast_grp;
	out->max_mcast_qp_attach = a.orig_attr.max_mcast_qp_attach;
	out->odp_general_caps = (uint32_t)a.odp_caps.general_caps;
	out->odp_rc_caps = a.odp_caps.per_transport_caps.rc_odp_caps;
	out->max_dm_size = a.max_dm_size;
	out->cq_mod_max_count = a.cq_mod_caps.max_cq_count;
	out->cq_mod_max_period = a.cq_mod_caps.max_cq_period;
	return 0;
}

int rlx_try_xrcd(struct ibv_context *ctx) {
	struct ibv_xrcd_init_attr a = {0};
	a.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	a.fd = -1;
	a.oflags = O_CREAT;
	errno = 0;
	struct ibv_xrcd *x = ibv_open_xrcd(ctx, &a);
	if (!x) return errno ? errno : EOPNOTSUPP;
	ibv_close_xrcd(x);
	return 0;
}

int rlx_try_dm(struct ibv_context *ctx, size_t len) {
	struct ibv_alloc_dm_attr a = {0};
	a.length = len;
	errno = 0;
	struct ibv_dm *dm = ibv_alloc_dm(ctx, &a);
	if (!dm) return errno ? errno : EOPNOTSUPP;
	ibv_free_dm(dm);
	return 0;
}

int rlx_try_cq_moderation(struct ibv_cq *cq) {
	struct ibv_modify_cq_attr a = {0};
	a.attr_mask = IBV_CQ_ATTR_MODERATE;
	a.moderate.cq_count = 8;
	a.moderate.cq_period = 16;
	errno = 0;
	return xerrno_of(ibv_modify_cq(cq, &a));
}

int rlx_try_odp(struct ibv_pd *pd, void *addr, size_t len) {
	errno = 0;
	struct ibv_mr *mr = X.reg_mr(pd, addr, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
	if (!mr) return errno ? errno : EOPNOTSUPP;
	X.dereg_mr(mr);
	return 0;
}

/* dma-buf: with fd -1 a provider that implements it reaches the kernel and
 * answers EBADF; one that does not answers EOPNOTSUPP before any fd is read. */
int rlx_try_dmabuf(struct ibv_pd *pd) {
	if (!X.reg_dmabuf_mr) return ENOSYS;
	errno = 0;
	struct ibv_mr *mr = X.reg_dmabuf_mr(pd, 0, 4096, 0, -1, IBV_ACCESS_LOCAL_WRITE);
	if (!mr) return errno ? errno : EOPNOTSUPP;
	X.dereg_mr(mr);
	return 0;
}
