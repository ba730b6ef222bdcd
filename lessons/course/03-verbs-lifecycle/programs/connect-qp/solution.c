/* Connect a QP by hand: RESET -> INIT -> RTR -> RTS against the lab's peer,
 * the QPN, PSN and GID exchanged over TCP, then one SEND. */
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

/* The lab's peer: an RC QP on rxe1 whose QPN, PSN and GID come back over
 * TCP from 10.0.0.2 port 7472 once it has read ours. */
#define PEER_ADDR "10.0.0.2"
#define PEER_PORT 7472
#define MY_PSN 1000
#define SEND_ID 1 /* the wr_id of our one SEND */

/* What one side tells the other: enough to address its QP. */
struct qp_info {
	unsigned qpn, psn;
	union ibv_gid gid;
};

/* exchange sends ours as one line "QPN PSN GID" (the GID as 32 hex
 * digits) over TCP and reads the peer's line back, within 5 seconds in
 * all. The peer answers only after its own QP is in RTR towards ours,
 * so once this returns 0 a SEND will find the peer's RECV. */
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
			fprintf(stderr, "exchange: the peer closed the socket without its QPN, PSN and GID\n");
			close(s);
			return -1;
		}
		len += r;
	}
	close(s);
	line[len] = 0;
	char g[64];
	if (sscanf(line, "%u %u %63s", &peer->qpn, &peer->psn, g) != 3 || strlen(g) != 32) {
		fprintf(stderr, "exchange: the peer's line is not \"QPN PSN GID\": %s", line);
		return -1;
	}
	for (int i = 0; i < 16; i++) {
		unsigned v;
		sscanf(g + 2 * i, "%2x", &v);
		peer->gid.raw[i] = v;
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
		.cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_qp *qp = cq ? ibv_create_qp(pd, &ia) : NULL;
	char msg[] = "hello, qp";
	struct ibv_mr *mr = qp ? ibv_reg_mr(pd, msg, sizeof msg, IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!mr) {
		perror("setup (rxe0, PD, CQ, QP, MR)");
		goto out;
	}
	printf("our QP %u is in RESET\n", qp->qp_num);

	/* RESET -> INIT: which port, which P_Key, what the peer may do to us
	 * (a SEND needs no remote access). */
	struct ibv_qp_attr init = {.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = 0};
	if (ibv_modify_qp(qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
		perror("ibv_modify_qp to INIT");
		goto out;
	}
	printf("INIT\n");

	struct qp_info mine = {.qpn = qp->qp_num, .psn = MY_PSN}, peer;
	if (ibv_query_gid(ctx, 1, 1, &mine.gid)) { /* index 1: rxe's IPv4 (RoCEv2) entry */
		perror("ibv_query_gid");
		goto out;
	}
	if (exchange(&mine, &peer))
		goto out;
	printf("the peer's QP %u, PSN %u\n", peer.qpn, peer.psn);

	/* INIT -> RTR: where to send (the peer's GID and QPN), which PSN to
	 * expect first (the peer's), the MTU. The hop limit is the RoCEv2
	 * packet's IP TTL: 64, not 1, which a router would drop. */
	struct ibv_qp_attr rtr = {.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = peer.qpn, .rq_psn = peer.psn, .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
		.ah_attr = {.is_global = 1, .port_num = 1,
			    .grh = {.dgid = peer.gid, .sgid_index = 1, .hop_limit = 64}}};
	if (ibv_modify_qp(qp, &rtr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
		perror("ibv_modify_qp to RTR");
		goto out;
	}
	printf("RTR\n");

	/* RTR -> RTS: our first PSN (the one we told the peer) and finite
	 * retries: timeout 14 (67 ms) and retry_cnt 3 end an unanswered SEND
	 * in IBV_WC_RETRY_EXC_ERR after about a quarter of a second; 7 would
	 * retry forever on rxe (lesson 02). */
	struct ibv_qp_attr rts = {.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 3,
		.rnr_retry = 3, .sq_psn = MY_PSN, .max_rd_atomic = 1};
	if (ibv_modify_qp(qp, &rts, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)) {
		perror("ibv_modify_qp to RTS");
		goto out;
	}
	printf("RTS\n");

	struct ibv_sge sge = {.addr = (uintptr_t)msg, .length = sizeof msg, .lkey = mr->lkey};
	struct ibv_send_wr wr = {.wr_id = SEND_ID, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED}, *bad;
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
	if (wc.wr_id != SEND_ID) { /* a completion is known by its wr_id, never by its place */
		fprintf(stderr, "a completion for wr_id %llu, which we never posted\n", (unsigned long long)wc.wr_id);
		goto out;
	}
	if (wc.status != IBV_WC_SUCCESS) {
		/* IBV_WC_RETRY_EXC_ERR: no acknowledgement came back. */
		fprintf(stderr, "SEND failed: %s (status %d, vendor error 0x%x)\n",
			ibv_wc_status_str(wc.status), wc.status, wc.vendor_err);
		goto out;
	}
	printf("SEND of %zu bytes completed: %s\n", sizeof msg, ibv_wc_status_str(wc.status));
	ret = 0;
out:
	/* Teardown in reverse order of what depends on what: the QP first
	 * (it holds the CQ and the PD, and no request of it may still use
	 * the MR), the MR, the CQ, the PD, the device. */
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
