/* WRITE_WITH_IMM as the signal: write a message into the peer's buffer
 * and tell the peer, in the same work request, how many bytes landed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <infiniband/verbs.h>

#define MY_PSN 1000
#define WRITE_ID 1 /* the wr_id of our one WRITE_WITH_IMM */

/* What the lab's peer on rxe1 published in /run/lab-peer/target. */
struct peer {
	unsigned qpn, psn;
	union ibv_gid gid;
	uint64_t addr;
	uint32_t rkey;
};

/* connect_to_peer reads the peer's target file, tells the peer our QP
 * (QPN, PSN, GID index 1) and moves our QP INIT -> RTR -> RTS: lesson
 * 03's hand-made connection, done for you here. */
static int connect_to_peer(struct ibv_context *ctx, struct ibv_qp *qp, struct peer *p)
{
	char g[40];
	unsigned long long addr;
	FILE *f = fopen("/run/lab-peer/target", "r");
	if (!f) {
		perror("peer: /run/lab-peer/target");
		return -1;
	}
	int n = fscanf(f, "%u %u %32s %llu %u", &p->qpn, &p->psn, g, &addr, &p->rkey);
	fclose(f);
	if (n != 5 || strlen(g) != 32) {
		fprintf(stderr, "peer: /run/lab-peer/target is not \"QPN PSN GID ADDR RKEY\"\n");
		return -1;
	}
	p->addr = addr;
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
	 * unanswered request after about a quarter of a second; rnr_retry 3
	 * ends one the peer has no RECV for (7 would retry forever). */
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
	struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 4, NULL, NULL, 0) : NULL;
	struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 4, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_qp *qp = cq ? ibv_create_qp(pd, &ia) : NULL;
	struct ibv_mr *mr = NULL;
	struct peer peer;
	if (!qp) {
		perror("setup (rxe0, PD, CQ, QP)");
		goto out;
	}
	if (connect_to_peer(ctx, qp, &peer))
		goto out;
	printf("connected to the peer's QP %u; its buffer: addr 0x%llx, rkey 0x%x\n",
	       peer.qpn, (unsigned long long)peer.addr, peer.rkey);

	char msg[] = "hello, imm";
	mr = ibv_reg_mr(pd, msg, sizeof msg, IBV_ACCESS_LOCAL_WRITE);
	if (!mr) {
		perror("ibv_reg_mr");
		goto out;
	}
	/* One work request writes the bytes and signals: the responder
	 * places the data, then consumes one of the peer's RECVs and
	 * completes it with the immediate. RC delivers in order, so the
	 * peer's completion comes after its buffer holds all of msg. The
	 * immediate travels in network byte order: htonl here, ntohl there. */
	struct ibv_sge sge = {.addr = (uintptr_t)msg, .length = sizeof msg, .lkey = mr->lkey};
	struct ibv_send_wr wr = {.wr_id = WRITE_ID, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE_WITH_IMM, .send_flags = IBV_SEND_SIGNALED,
		.imm_data = htonl(sizeof msg)};
	wr.wr.rdma.remote_addr = peer.addr;
	wr.wr.rdma.rkey = peer.rkey;
	struct ibv_send_wr *bad;
	int err = ibv_post_send(qp, &wr, &bad);
	if (err) {
		fprintf(stderr, "ibv_post_send: %s\n", strerror(err));
		goto out;
	}
	struct ibv_wc wc;
	int got = poll_one(cq, &wc, 10);
	if (got <= 0) {
		fprintf(stderr, got < 0 ? "ibv_poll_cq failed\n" : "no completion after 10 s\n");
		goto out;
	}
	if (wc.wr_id != WRITE_ID) { /* a completion is known by its wr_id */
		fprintf(stderr, "a completion for wr_id %llu, which we never posted\n", (unsigned long long)wc.wr_id);
		goto out;
	}
	if (wc.status != IBV_WC_SUCCESS) {
		/* IBV_WC_RNR_RETRY_EXC_ERR: the peer had no RECV for the
		 * immediate. IBV_WC_REM_ACCESS_ERR: a wrong rkey or address. */
		fprintf(stderr, "WRITE_WITH_IMM failed: %s (status %d, vendor error 0x%x)\n",
			ibv_wc_status_str(wc.status), wc.status, wc.vendor_err);
		goto out;
	}
	printf("WRITE_WITH_IMM of %zu bytes, immediate %zu, completed: %s\n", sizeof msg, sizeof msg,
	       ibv_wc_status_str(wc.status));
	ret = 0;
out:
	/* Teardown in reverse order of what depends on what: the QP (it
	 * holds the CQ and the PD), the MR, the CQ, the PD, the device. */
	if (qp)
		ibv_destroy_qp(qp);
	if (mr)
		ibv_dereg_mr(mr);
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
	if (ctx)
		ibv_close_device(ctx);
	if (list)
		ibv_free_device_list(list);
	return ret;
}
