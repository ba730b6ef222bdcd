/* An SRQ server: one shared receive queue feeds the receives of three RC
 * QPs, one per client of the lab's peer. Each request ("ping C.M NONCE")
 * is answered on the QP it arrived on with the same bytes, "ping" turned
 * into "pong". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#define CLIENTS 3    /* the peer's clients: one QP of ours for each */
#define MESSAGES 3   /* requests per client */
#define POOL 4       /* receives in the SRQ, fewer than the 9 requests: each is posted again */
#define MSG 64       /* bytes of one request or answer */
#define MY_PSN 2000
#define SEND_BASE 100 /* wr_id of the answer on QP i: SEND_BASE + i; a receive's wr_id is its slot */

/* What the lab's peer published in /run/lab-peer/clients: a line per client. */
struct client {
	unsigned qpn, psn;
	union ibv_gid gid;
};

/* read_clients reads the peer's CLIENTS lines "QPN PSN GID". */
static int read_clients(struct client *cl)
{
	FILE *f = fopen("/run/lab-peer/clients", "r");
	if (!f) {
		perror("peer: /run/lab-peer/clients");
		return -1;
	}
	for (int c = 0; c < CLIENTS; c++) {
		char g[40];
		if (fscanf(f, "%u %u %32s", &cl[c].qpn, &cl[c].psn, g) != 3 || strlen(g) != 32) {
			fprintf(stderr, "peer: line %d of /run/lab-peer/clients is not \"QPN PSN GID\"\n", c + 1);
			fclose(f);
			return -1;
		}
		for (int i = 0; i < 16; i++) {
			unsigned v;
			sscanf(g + 2 * i, "%2x", &v);
			cl[c].gid.raw[i] = v;
		}
	}
	fclose(f);
	return 0;
}

/* tell_peer writes our QPs to /run/lab-peer/server, line c for client c,
 * and waits (5 s at most) until the peer has connected its clients. */
static int tell_peer(struct ibv_context *ctx, struct ibv_qp **qp)
{
	union ibv_gid mine;
	if (ibv_query_gid(ctx, 1, 1, &mine)) { /* index 1: rxe's IPv4 (RoCEv2) entry */
		perror("ibv_query_gid");
		return -1;
	}
	/* Written whole, then renamed: the peer never reads half a file. */
	FILE *f = fopen("/run/lab-peer/.server", "w");
	if (!f) {
		perror("/run/lab-peer/.server");
		return -1;
	}
	for (int c = 0; c < CLIENTS; c++) {
		fprintf(f, "%u %u ", qp[c]->qp_num, MY_PSN + c);
		for (int i = 0; i < 16; i++)
			fprintf(f, "%02x", mine.raw[i]);
		fprintf(f, "\n");
	}
	if (fclose(f) || rename("/run/lab-peer/.server", "/run/lab-peer/server")) {
		perror("/run/lab-peer/server");
		return -1;
	}
	for (int i = 0; access("/run/lab-peer/connected", F_OK); i++) {
		if (i == 500) {
			fprintf(stderr, "peer: no /run/lab-peer/connected after 5 s: the peer did not connect its clients\n");
			return -1;
		}
		usleep(10000);
	}
	return 0;
}

/* connect_qp moves qp INIT -> RTR -> RTS towards client cl, our PSN psn. */
static int connect_qp(struct ibv_qp *qp, const struct client *cl, unsigned psn)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1};
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
		perror("ibv_modify_qp to INIT");
		return -1;
	}
	/* min_rnr_timer 12 (0.64 ms): how long a client waits before it
	 * sends again when the SRQ had no receive for its request. */
	struct ibv_qp_attr r = {.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = cl->qpn, .rq_psn = cl->psn, .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
		.ah_attr = {.is_global = 1, .port_num = 1,
			    .grh = {.dgid = cl->gid, .sgid_index = 1, .hop_limit = 64}}};
	if (ibv_modify_qp(qp, &r, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
		perror("ibv_modify_qp to RTR");
		return -1;
	}
	/* Finite retries (7 would retry forever on rxe). */
	struct ibv_qp_attr s = {.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 3,
		.rnr_retry = 3, .sq_psn = psn, .max_rd_atomic = 1};
	if (ibv_modify_qp(qp, &s, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)) {
		perror("ibv_modify_qp to RTS");
		return -1;
	}
	return 0;
}

/* The registered memory: the receive slots of the pool, and two answer
 * buffers per QP. A client sends its next request only once our answer
 * has reached it, so at most two answers of one QP are ever waiting for
 * their completion: two buffers used in turn (and max_send_wr 2) mean a
 * buffer is never written while the device may still read it. */
static struct {
	char slot[POOL][MSG];
	char answer[CLIENTS][2][MSG];
} mem;

/* post_slot gives receive slot i (back) to the SRQ. */
static int post_slot(struct ibv_srq *srq, struct ibv_mr *mr, int i)
{
	struct ibv_sge sge = {.addr = (uintptr_t)mem.slot[i], .length = MSG, .lkey = mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1}, *bad;
	int err = ibv_post_srq_recv(srq, &wr, &bad);
	if (err)
		fprintf(stderr, "ibv_post_srq_recv: %s\n", strerror(err));
	return err ? -1 : 0;
}

/* serve answers CLIENTS * MESSAGES requests within 10 s. Every
 * completion is dispatched by its wr_id: a slot number is a request, in
 * that slot, from the QP wc.qp_num names; SEND_BASE + i is our answer on
 * QP i. */
static int serve(struct ibv_cq *cq, struct ibv_srq *srq, struct ibv_mr *mr, struct ibv_qp **qp)
{
	int requests = 0, answers = 0, turn[CLIENTS] = {0};
	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	while (answers < CLIENTS * MESSAGES) {
		struct ibv_wc wc;
		int n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0) {
			fprintf(stderr, "ibv_poll_cq failed\n");
			return -1;
		}
		if (n == 0) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			if (now.tv_sec - start.tv_sec >= 10) {
				fprintf(stderr, "after 10 s: %d requests, %d answers of %d\n", requests, answers,
					CLIENTS * MESSAGES);
				return -1;
			}
			continue;
		}
		if (wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "%s (wr_id %llu) failed: %s\n", wc.wr_id >= SEND_BASE ? "answer" : "receive",
				(unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
			return -1;
		}
		if (wc.wr_id >= SEND_BASE && wc.wr_id < SEND_BASE + CLIENTS) {
			answers++;
			continue;
		}
		if (wc.wr_id >= POOL) {
			fprintf(stderr, "a completion for wr_id %llu, which we never posted\n", (unsigned long long)wc.wr_id);
			return -1;
		}
		/* A request. The SRQ does not say which QP it came on: the
		 * completion does, in qp_num. */
		int slot = wc.wr_id, c = -1;
		for (int i = 0; i < CLIENTS; i++)
			if (qp[i]->qp_num == wc.qp_num)
				c = i;
		if (c < 0) {
			fprintf(stderr, "a request on QP %u, none of ours\n", wc.qp_num);
			return -1;
		}
		requests++;
		char *answer = mem.answer[c][turn[c]++ % 2];
		unsigned len = wc.byte_len < MSG ? wc.byte_len : MSG;
		memcpy(answer, mem.slot[slot], len);
		answer[MSG - 1] = 0;
		if (len < 4 || memcmp(answer, "ping", 4)) {
			fprintf(stderr, "the request on QP %u is not a ping\n", wc.qp_num);
			return -1;
		}
		memcpy(answer, "pong", 4);
		/* The slot is copied out: give it back to the pool at once. */
		if (post_slot(srq, mr, slot))
			return -1;
		struct ibv_sge sge = {.addr = (uintptr_t)answer, .length = len, .lkey = mr->lkey};
		struct ibv_send_wr wr = {.wr_id = SEND_BASE + c, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED}, *bad;
		int err = ibv_post_send(qp[c], &wr, &bad);
		if (err) {
			fprintf(stderr, "ibv_post_send on QP %u: %s\n", qp[c]->qp_num, strerror(err));
			return -1;
		}
		printf("QP %u (client %d): %s\n", wc.qp_num, c, answer);
	}
	return 0;
}

int main(void)
{
	int ret = 1;
	struct ibv_qp *qp[CLIENTS] = {0};
	struct client cl[CLIENTS];
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device *dev = NULL;
	for (int i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), "rxe0"))
			dev = list[i];
	struct ibv_context *ctx = dev ? ibv_open_device(dev) : NULL;
	struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	/* One CQ for every QP's sends and receives: POOL receives and two
	 * answers per QP at most outstanding. */
	struct ibv_cq *cq = pd ? ibv_create_cq(ctx, POOL + 2 * CLIENTS, NULL, NULL, 0) : NULL;
	struct ibv_mr *mr = cq ? ibv_reg_mr(pd, &mem, sizeof mem, IBV_ACCESS_LOCAL_WRITE) : NULL;
	struct ibv_srq *srq = NULL;
	if (!mr) {
		perror("setup (rxe0, PD, CQ, MR)");
		goto out;
	}
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = POOL, .max_sge = 1}};
	srq = ibv_create_srq(pd, &sa);
	if (!srq) {
		perror("ibv_create_srq");
		goto out;
	}
	for (int c = 0; c < CLIENTS; c++) {
		/* .srq: this QP takes its receives from the pool; it has no
		 * receive queue of its own, so max_recv_wr is not asked for. */
		struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .srq = srq, .qp_type = IBV_QPT_RC,
			.cap = {.max_send_wr = 2, .max_send_sge = 1}};
		qp[c] = ibv_create_qp(pd, &ia);
		if (!qp[c]) {
			perror("ibv_create_qp with the SRQ");
			goto out;
		}
	}
	/* The pool is full before any client knows our QPs: a request that
	 * finds no receive is answered with an RNR NAK. */
	for (int i = 0; i < POOL; i++)
		if (post_slot(srq, mr, i))
			goto out;
	if (read_clients(cl))
		goto out;
	for (int c = 0; c < CLIENTS; c++)
		if (connect_qp(qp[c], &cl[c], MY_PSN + c))
			goto out;
	if (tell_peer(ctx, qp))
		goto out;
	printf("SRQ of %d receives, QPs %u %u %u connected to the peer's clients\n", POOL, qp[0]->qp_num,
	       qp[1]->qp_num, qp[2]->qp_num);
	if (serve(cq, srq, mr, qp))
		goto out;
	printf("%d requests answered\n", CLIENTS * MESSAGES);
	ret = 0;
out:
	/* Teardown: the QPs first (they hold the SRQ, the CQ and the PD),
	 * then the SRQ (EBUSY while a QP still uses it), the MR, the CQ, the
	 * PD, the device. On hardware a server would wait for each QP's
	 * IBV_EVENT_QP_LAST_WQE_REACHED before destroying it; rxe on Linux
	 * 6.1 never raises it. */
	for (int c = 0; c < CLIENTS; c++)
		if (qp[c])
			ibv_destroy_qp(qp[c]);
	if (srq)
		ibv_destroy_srq(srq);
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
