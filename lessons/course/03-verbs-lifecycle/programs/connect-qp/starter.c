/* Connect a QP by hand: RESET -> INIT -> RTR -> RTS against the lab's peer,
 * the QPN, PSN and GID exchanged over TCP, then one SEND.
 *
 * Given: the setup (rxe0, PD, CQ, QP, the MR of msg), exchange() (the TCP
 * talk with the peer), poll_one() and the teardown. Yours: the TODOs in
 * main, every call checked. */
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

	/* TODO 1: RESET -> INIT with ibv_modify_qp (state, P_Key index 0,
	 * port 1, access flags 0); on failure perror and goto out. */

	struct qp_info mine = {.qpn = qp->qp_num, .psn = MY_PSN}, peer;
	/* TODO 2: fill mine.gid with ibv_query_gid (port 1, GID index 1). */
	if (exchange(&mine, &peer))
		goto out;
	printf("the peer's QP %u, PSN %u\n", peer.qpn, peer.psn);

	/* TODO 3: INIT -> RTR towards the peer: path MTU 1024, its QPN and
	 * PSN, max_dest_rd_atomic 1, min_rnr_timer 12, and an address with
	 * a GRH (is_global 1, port 1, dgid = peer.gid, sgid_index 1,
	 * hop_limit 64). */

	/* TODO 4: RTR -> RTS: sq_psn MY_PSN, timeout 14, retry_cnt 3,
	 * rnr_retry 3, max_rd_atomic 1. */

	/* TODO 5: post one signaled IBV_WR_SEND of msg (wr_id SEND_ID), wait
	 * with poll_one(cq, &wc, 10), check the completion's wr_id and
	 * status, and set ret = 0 when it is IBV_WC_SUCCESS. */
	(void)poll_one;
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
