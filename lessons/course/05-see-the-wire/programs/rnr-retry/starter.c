/* Survive a late RECV: one SEND to a peer that posts its receive only
 * after it has answered the SEND with an RNR NAK, and 300 ms later.
 *
 * This program is complete, and it fails. Run it, read how its SEND
 * ends and what rxe0's counters say, then fix the TODO in main so that
 * the SEND completes. Everything else is given. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <errno.h>
#include <time.h>
#include <unistd.h>
#include <poll.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <infiniband/verbs.h>

/* The lab's peer: an RC QP on rxe1 whose QPN, PSN, GID and a token come
 * back over TCP from 10.0.0.2 port 7474 once it has read ours. */
#define PEER_ADDR "10.0.0.2"
#define PEER_PORT 7474
#define MY_PSN 1000
#define SEND_ID 1   /* the wr_id of our one SEND */
#define DEADLINE 5  /* seconds we wait for its completion */

/* What one side tells the other: enough to address its QP, and the
 * peer's token, which our SEND must carry back. */
struct qp_info {
	unsigned qpn, psn;
	union ibv_gid gid;
	char token[16];
};

/* exchange sends ours as one line "QPN PSN GID" (the GID as 32 hex
 * digits) over TCP and reads the peer's line "QPN PSN GID TOKEN" back,
 * within 5 seconds in all. The peer answers once its QP is in RTS
 * towards ours, but it has posted no RECV yet. */
static int exchange(const struct qp_info *mine, struct qp_info *peer)
{
	char line[128];
	int n = snprintf(line, sizeof line, "%u %u ", mine->qpn, mine->psn);
	for (int i = 0; i < 16; i++)
		n += snprintf(line + n, sizeof line - n, "%02x", mine->gid.raw[i]);
	n += snprintf(line + n, sizeof line - n, "\n");

	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(PEER_PORT)};
	inet_pton(AF_INET, PEER_ADDR, &sa.sin_addr);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof sa)) {
		fprintf(stderr, "exchange: connect to %s:%d: %s\n", PEER_ADDR, PEER_PORT, strerror(errno));
		if (s >= 0)
			close(s);
		return -1;
	}
	if (write(s, line, n) != n) {
		fprintf(stderr, "exchange: write: %s\n", strerror(errno));
		close(s);
		return -1;
	}
	size_t len = 0;
	while (!memchr(line, '\n', len) && len < sizeof line - 1) {
		struct pollfd p = {.fd = s, .events = POLLIN};
		if (poll(&p, 1, 5000) != 1) {
			fprintf(stderr, "exchange: no answer from the peer within 5 s\n");
			close(s);
			return -1;
		}
		ssize_t r = read(s, line + len, sizeof line - 1 - len);
		if (r <= 0) {
			fprintf(stderr, "exchange: the peer closed the socket without its QPN, PSN, GID and token\n");
			close(s);
			return -1;
		}
		len += r;
	}
	close(s);
	line[len] = 0;
	char g[64];
	if (sscanf(line, "%u %u %63s %15s", &peer->qpn, &peer->psn, g, peer->token) != 4 || strlen(g) != 32) {
		fprintf(stderr, "exchange: the peer's line is not \"QPN PSN GID TOKEN\": %s", line);
		return -1;
	}
	for (int i = 0; i < 16; i++) {
		unsigned v;
		sscanf(g + 2 * i, "%2x", &v);
		peer->gid.raw[i] = v;
	}
	return 0;
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* counter reads one of rxe0's hw_counters; -1 if it cannot. The kernel
 * refreshes them at most every 10 ms or so, so two reads closer than
 * that may return the same, stale value. */
static long counter(const char *name)
{
	char path[128];
	snprintf(path, sizeof path, "/sys/class/infiniband/rxe0/ports/1/hw_counters/%s", name);
	FILE *f = fopen(path, "r");
	long v = -1;
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/* poll_one waits at most secs seconds for one completion on cq: 1 when
 * it came (its status still to be read), 0 on the deadline, -1 when
 * polling failed. */
static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc, int secs)
{
	double end = now_ms() + secs * 1e3;
	for (;;) {
		int n = ibv_poll_cq(cq, 1, wc);
		if (n != 0)
			return n < 0 ? -1 : 1;
		if (now_ms() >= end)
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
		.cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_qp *qp = cq ? ibv_create_qp(pd, &ia) : NULL;
	char msg[32] = "";
	struct ibv_mr *mr = qp ? ibv_reg_mr(pd, msg, sizeof msg, IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!mr) {
		perror("setup (rxe0, PD, CQ, QP, MR)");
		goto out;
	}
	struct ibv_qp_attr init = {.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1};
	if (ibv_modify_qp(qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
		perror("ibv_modify_qp to INIT");
		goto out;
	}
	struct qp_info mine = {.qpn = qp->qp_num, .psn = MY_PSN}, peer;
	if (ibv_query_gid(ctx, 1, 1, &mine.gid)) {
		perror("ibv_query_gid");
		goto out;
	}
	if (exchange(&mine, &peer))
		goto out;
	printf("the peer's QP %u, PSN %u, token %s\n", peer.qpn, peer.psn, peer.token);

	/* INIT -> RTR. min_rnr_timer is what OUR QP, as a responder, asks
	 * the peer to wait when a SEND of its finds no RECV here: 12 is
	 * 0.64 ms. It does not change how long our own SEND waits: that
	 * comes in the peer's RNR NAK. */
	struct ibv_qp_attr rtr = {.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = peer.qpn, .rq_psn = peer.psn, .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
		.ah_attr = {.is_global = 1, .port_num = 1,
			    .grh = {.dgid = peer.gid, .sgid_index = 1, .hop_limit = 64}}};
	if (ibv_modify_qp(qp, &rtr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
		perror("ibv_modify_qp to RTR");
		goto out;
	}
	/* RTR -> RTS: our first PSN (the one we told the peer) and the retry
	 * budgets. For lost packets: timeout 18 (1.07 s) and retry_cnt 3;
	 * the timeout is longer than lesson 03's 14 because rxe resets
	 * retry_cnt only on an ACK, so ACK timeouts that expire during a long
	 * wait for the peer's RECV can spend it.
	 * TODO: this SEND will meet a peer with no RECV posted. Choose
	 * rnr_retry so that it is still trying when the RECV arrives. */
	struct ibv_qp_attr rts = {.qp_state = IBV_QPS_RTS, .timeout = 18, .retry_cnt = 3,
		.rnr_retry = 0, .sq_psn = MY_PSN, .max_rd_atomic = 1};
	if (ibv_modify_qp(qp, &rts, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)) {
		perror("ibv_modify_qp to RTS");
		goto out;
	}

	snprintf(msg, sizeof msg, "token %s", peer.token);
	long rnr0 = counter("rcvd_rnr_err");
	double t0 = now_ms();
	struct ibv_sge sge = {.addr = (uintptr_t)msg, .length = strlen(msg) + 1, .lkey = mr->lkey};
	struct ibv_send_wr wr = {.wr_id = SEND_ID, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED}, *bad;
	int err = ibv_post_send(qp, &wr, &bad);
	if (err) {
		fprintf(stderr, "ibv_post_send: %s\n", strerror(err));
		goto out;
	}
	struct ibv_wc wc;
	int got = poll_one(cq, &wc, DEADLINE);
	double took = now_ms() - t0;
	while (now_ms() - t0 < 25) /* past the kernel's counter cache */
		usleep(1000);
	long rnr = counter("rcvd_rnr_err") - rnr0;
	if (got <= 0) {
		/* With rnr_retry 7 a receiver that never posts keeps us here. */
		fprintf(stderr, got < 0 ? "ibv_poll_cq failed\n" :
			"no completion after %d s: rxe0 received %ld RNR NAKs meanwhile (rcvd_rnr_err)\n",
			DEADLINE, rnr);
		goto out;
	}
	if (wc.wr_id != SEND_ID) { /* a completion is known by its wr_id, never by its place */
		fprintf(stderr, "a completion for wr_id %llu, which we never posted\n", (unsigned long long)wc.wr_id);
		goto out;
	}
	if (wc.status != IBV_WC_SUCCESS) {
		/* IBV_WC_RNR_RETRY_EXC_ERR: the peer still had no RECV when the
		 * RNR retries ran out. */
		fprintf(stderr, "SEND failed after %.0f ms: %s (status %d); rxe0 received %ld RNR NAKs (rcvd_rnr_err)\n",
			took, ibv_wc_status_str(wc.status), wc.status, rnr);
		goto out;
	}
	printf("SEND of \"%s\" completed after %.0f ms: %s; rxe0 received %ld RNR NAKs (rcvd_rnr_err)\n",
	       msg, took, ibv_wc_status_str(wc.status), rnr);
	ret = 0;
out:
	/* Teardown: the QP first (it holds the CQ and the PD, and no request
	 * of it may still use the MR), the MR, the CQ, the PD, the device. */
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
