/* A lock with COMPARE_AND_SWAP: the peer on rxe1 holds a lock word and a
 * counter and takes the lock itself, again and again. Take the lock with
 * IBV_WR_ATOMIC_CMP_AND_SWP, add one to the counter with a READ and a
 * WRITE while you hold it, release it; ROUNDS times. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#define MY_PSN 1000
#define MY_ID 2     /* what the lock word holds while we own it (the peer uses 1) */
#define ROUNDS 50   /* increments, each under its own hold of the lock */
#define MAX_TRIES 2000 /* CAS attempts for one acquisition before giving up: seconds, not for ever */

/* The wr_ids: each completion is matched to what we posted. */
enum { CAS_ID = 1, READ_ID, WRITE_ID, RELEASE_ID };

/* What the lab's peer on rxe1 published in /run/lab-peer/target. */
struct peer {
	unsigned qpn, psn;
	union ibv_gid gid;
	uint64_t lock_addr, counter_addr; /* 8 bytes each, 8-byte aligned */
	uint32_t lock_rkey;               /* remote atomics only */
	uint32_t counter_rkey;            /* remote READ and WRITE only */
};

/* connect_to_peer reads the peer's target file, tells the peer our QP
 * (QPN, PSN, GID index 1) and moves our QP INIT -> RTR -> RTS: lesson
 * 03's hand-made connection, done for you here. */
static int connect_to_peer(struct ibv_context *ctx, struct ibv_qp *qp, struct peer *p)
{
	char g[40];
	unsigned long long la, ca;
	FILE *f = fopen("/run/lab-peer/target", "r");
	if (!f) {
		perror("peer: /run/lab-peer/target");
		return -1;
	}
	int n = fscanf(f, "%u %u %32s %llu %u %llu %u", &p->qpn, &p->psn, g, &la, &p->lock_rkey, &ca,
		       &p->counter_rkey);
	fclose(f);
	if (n != 7 || strlen(g) != 32) {
		fprintf(stderr, "peer: /run/lab-peer/target is not \"QPN PSN GID LOCK_ADDR LOCK_RKEY COUNTER_ADDR COUNTER_RKEY\"\n");
		return -1;
	}
	p->lock_addr = la;
	p->counter_addr = ca;
	for (int i = 0; i < 16; i++) {
		unsigned v;
		sscanf(g + 2 * i, "%2x", &v);
		p->gid.raw[i] = v;
	}
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1};
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
		perror("ibv_modify_qp to INIT");
		return -1;
	}
	union ibv_gid mine;
	if (ibv_query_gid(ctx, 1, 1, &mine)) { /* index 1: rxe's IPv4 (RoCEv2) entry */
		perror("ibv_query_gid");
		return -1;
	}
	/* Written whole, then renamed: the peer never reads half a line. */
	f = fopen("/run/lab-peer/.initiator", "w");
	if (!f) {
		perror("/run/lab-peer/.initiator");
		return -1;
	}
	fprintf(f, "%u %u ", qp->qp_num, MY_PSN);
	for (int i = 0; i < 16; i++)
		fprintf(f, "%02x", mine.raw[i]);
	fprintf(f, "\n");
	if (fclose(f) || rename("/run/lab-peer/.initiator", "/run/lab-peer/initiator")) {
		perror("/run/lab-peer/initiator");
		return -1;
	}
	struct ibv_qp_attr r = {.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = p->qpn, .rq_psn = p->psn, .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
		.ah_attr = {.is_global = 1, .port_num = 1,
			    .grh = {.dgid = p->gid, .sgid_index = 1, .hop_limit = 64}}};
	if (ibv_modify_qp(qp, &r, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
		perror("ibv_modify_qp to RTR");
		return -1;
	}
	/* Finite retries: timeout 14 (67 ms) and retry_cnt 3 end an
	 * unanswered request after about a quarter of a second (7 would
	 * retry forever on rxe). max_rd_atomic: one READ or atomic of ours
	 * outstanding at a time, which is all this program ever has. */
	struct ibv_qp_attr s = {.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 3,
		.rnr_retry = 3, .sq_psn = MY_PSN, .max_rd_atomic = 1};
	if (ibv_modify_qp(qp, &s, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)) {
		perror("ibv_modify_qp to RTS");
		return -1;
	}
	for (int i = 0; access("/run/lab-peer/connected", F_OK); i++) {
		if (i == 500) { /* 5 s */
			fprintf(stderr, "peer: no /run/lab-peer/connected after 5 s: the peer did not connect its QP to ours\n");
			return -1;
		}
		usleep(10000);
	}
	return 0;
}

/* poll_one waits at most secs seconds for one completion on cq: 1 when
 * it came (its status still to be read), 0 on the deadline, -1 when
 * polling failed. */
static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc, int secs)
{
	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		int n = ibv_poll_cq(cq, 1, wc);
		if (n != 0)
			return n < 0 ? -1 : 1;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - start.tv_sec >= secs)
			return 0;
	}
}


/* Everything one request needs: our QP and CQ, the peer, and the 16
 * bytes of ours registered for the results (old: what a CAS found;
 * val: the counter as READ, then as WRITTEN). */
struct conn {
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct peer peer;
	struct {
		uint64_t old, val;
	} *local;
};

/* run_one posts wr, signaled, and waits for its completion: 0 when it
 * succeeded. One request at a time: the next step needs this one's
 * result. */
static int run_one(struct conn *c, struct ibv_send_wr *wr, const char *what)
{
	struct ibv_send_wr *bad;
	wr->send_flags = IBV_SEND_SIGNALED;
	int err = ibv_post_send(c->qp, wr, &bad);
	if (err) {
		fprintf(stderr, "%s: ibv_post_send: %s\n", what, strerror(err));
		return -1;
	}
	struct ibv_wc wc;
	int got = poll_one(c->cq, &wc, 5);
	if (got <= 0) {
		fprintf(stderr, "%s: %s\n", what, got < 0 ? "ibv_poll_cq failed" : "no completion after 5 s");
		return -1;
	}
	if (wc.wr_id != wr->wr_id) {
		fprintf(stderr, "%s: a completion for wr_id %llu, not %llu\n", what, (unsigned long long)wc.wr_id,
			(unsigned long long)wr->wr_id);
		return -1;
	}
	if (wc.status != IBV_WC_SUCCESS) {
		/* IBV_WC_REM_ACCESS_ERR: a wrong rkey, or a WRITE to the lock
		 * (its MR grants atomics only); IBV_WC_REM_INV_REQ_ERR: an
		 * atomic the responder does not accept. */
		fprintf(stderr, "%s failed: %s (status %d)\n", what, ibv_wc_status_str(wc.status), wc.status);
		return -1;
	}
	return 0;
}

/* cas does one COMPARE_AND_SWAP on the peer's lock word: if it holds
 * compare it becomes swap. Either way *old is what it held. */
static int cas(struct conn *c, uint64_t compare, uint64_t swap, uint64_t *old, uint64_t id)
{
	struct ibv_sge sge = {.addr = (uintptr_t)&c->local->old, .length = 8, .lkey = c->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_ATOMIC_CMP_AND_SWP};
	wr.wr.atomic.remote_addr = c->peer.lock_addr;
	wr.wr.atomic.rkey = c->peer.lock_rkey;
	wr.wr.atomic.compare_add = compare;
	wr.wr.atomic.swap = swap;
	if (run_one(c, &wr, id == CAS_ID ? "CAS (acquire)" : "CAS (release)"))
		return -1;
	*old = c->local->old;
	return 0;
}

/* acquire spins on CAS 0 -> MY_ID until it finds the lock free: a
 * bounded number of tries, each a round trip, with a short pause after
 * a miss so the holder gets the device. *tries counts them. */
static int acquire(struct conn *c, unsigned long *tries)
{
	for (int i = 0; i < MAX_TRIES; i++) {
		uint64_t old;
		if (cas(c, 0, MY_ID, &old, CAS_ID))
			return -1;
		(*tries)++;
		if (old == 0)
			return 0; /* it was free, and now it is ours */
		usleep(50);
	}
	fprintf(stderr, "the lock stayed taken for %d tries\n", MAX_TRIES);
	return -1;
}

/* increment reads the counter, adds one and writes it back: safe only
 * because we hold the lock, so nobody else does the same meanwhile. */
static int increment(struct conn *c)
{
	struct ibv_sge sge = {.addr = (uintptr_t)&c->local->val, .length = 8, .lkey = c->mr->lkey};
	struct ibv_send_wr rd = {.wr_id = READ_ID, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_READ};
	rd.wr.rdma.remote_addr = c->peer.counter_addr;
	rd.wr.rdma.rkey = c->peer.counter_rkey;
	if (run_one(c, &rd, "READ of the counter"))
		return -1;
	c->local->val++;
	struct ibv_send_wr wr = {.wr_id = WRITE_ID, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE};
	wr.wr.rdma.remote_addr = c->peer.counter_addr;
	wr.wr.rdma.rkey = c->peer.counter_rkey;
	return run_one(c, &wr, "WRITE of the counter");
}

/* release gives the lock back with CAS MY_ID -> 0, which also proves
 * it was ours: any other old value means mutual exclusion was broken. */
static int release(struct conn *c)
{
	uint64_t old;
	if (cas(c, MY_ID, 0, &old, RELEASE_ID))
		return -1;
	if (old != MY_ID) {
		fprintf(stderr, "release: the lock word held %llu, not our %d\n", (unsigned long long)old, MY_ID);
		return -1;
	}
	return 0;
}

int main(void)
{
	int ret = 1;
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device *dev = NULL;
	for (int i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), "rxe0"))
			dev = list[i];
	struct ibv_context *ctx = dev ? ibv_open_device(dev) : NULL;
	struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	struct conn c = {0};
	c.cq = pd ? ibv_create_cq(ctx, 4, NULL, NULL, 0) : NULL;
	struct ibv_qp_init_attr ia = {.send_cq = c.cq, .recv_cq = c.cq, .qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 4, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};
	c.qp = c.cq ? ibv_create_qp(pd, &ia) : NULL;
	/* 8-byte aligned, as an atomic's result must be on some devices. */
	if (posix_memalign((void **)&c.local, 64, sizeof *c.local))
		c.local = NULL;
	if (!c.qp || !c.local) {
		perror("setup (rxe0, PD, CQ, QP, memory)");
		goto out;
	}
	memset(c.local, 0, sizeof *c.local);
	c.mr = ibv_reg_mr(pd, c.local, sizeof *c.local, IBV_ACCESS_LOCAL_WRITE);
	if (!c.mr) {
		perror("ibv_reg_mr");
		goto out;
	}
	if (connect_to_peer(ctx, c.qp, &c.peer))
		goto out;
	printf("connected to the peer's QP %u; lock at 0x%llx, counter at 0x%llx\n", c.peer.qpn,
	       (unsigned long long)c.peer.lock_addr, (unsigned long long)c.peer.counter_addr);

	unsigned long tries = 0;
	int done = 0;
	for (; done < ROUNDS; done++) {
		if (acquire(&c, &tries))
			break;
		int bad = increment(&c);
		/* Release even after a failed increment, if the QP still can. */
		if (release(&c) || bad)
			break;
	}
	printf("%d increments under the lock, %lu CAS to acquire it (%lu found it taken)\n", done, tries,
	       tries - done);
	if (done == ROUNDS)
		ret = 0;
out:
	/* Teardown in reverse order of what depends on what: the QP (it
	 * holds the CQ and the PD), the MR, the CQ, the PD, the device. */
	if (c.qp)
		ibv_destroy_qp(c.qp);
	if (c.mr)
		ibv_dereg_mr(c.mr);
	free(c.local);
	if (c.cq)
		ibv_destroy_cq(c.cq);
	if (pd)
		ibv_dealloc_pd(pd);
	if (ctx)
		ibv_close_device(ctx);
	if (list)
		ibv_free_device_list(list);
	return ret;
}
