/* A UD exchange: a UD QP receives the peer's datagram (40 bytes of GRH
 * area, then the payload) and sends it all back through an address handle.
 *
 * Given: the setup (rxe0, PD, CQ, UD QP, the MR of buf), exchange() (the
 * TCP talk with the peer), poll_one(), wait_for() and the teardown. Yours:
 * the TODOs in main, every call checked. */
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

/* The lab's peer: a UD QP on rxe1 whose QPN, Q_Key and GID come back
 * over TCP from 10.0.0.2 port 7473 once it has read ours; right after
 * its answer it SENDs us one datagram. */
#define PEER_ADDR "10.0.0.2"
#define PEER_PORT 7473
#define QKEY 0x11111111
#define GRH 40     /* every UD receive starts with a 40-byte GRH area */
#define RECV_ID 1  /* the wr_id of our RECV */
#define SEND_ID 2  /* … and of our SEND */

/* What one side tells the other: enough to address its UD QP. */
struct ud_info {
	unsigned qpn, qkey;
	union ibv_gid gid;
};

/* exchange sends ours as one line "QPN QKEY GID" (Q_Key in hex, the GID
 * as 32 hex digits) over TCP and reads the peer's line back, within 5
 * seconds in all. The peer's datagram follows its answer at once. */
static int exchange(const struct ud_info *mine, struct ud_info *peer)
{
	char line[128];
	int n = snprintf(line, sizeof line, "%u %x ", mine->qpn, mine->qkey);
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
			fprintf(stderr, "exchange: the peer closed the socket without its QPN, Q_Key and GID\n");
			close(s);
			return -1;
		}
		len += r;
	}
	close(s);
	line[len] = 0;
	char g[64];
	if (sscanf(line, "%u %x %63s", &peer->qpn, &peer->qkey, g) != 3 || strlen(g) != 32) {
		fprintf(stderr, "exchange: the peer's line is not \"QPN QKEY GID\": %s", line);
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
 * it came (its wr_id and status still to be read), 0 on the deadline,
 * -1 when polling failed. */
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

/* wait_for waits for the completion of the request id and says what
 * went wrong if it is not a success: 0 when it completed well. */
static int wait_for(struct ibv_cq *cq, struct ibv_wc *wc, uint64_t id, const char *what)
{
	int got = poll_one(cq, wc, 10);
	if (got <= 0) {
		fprintf(stderr, got < 0 ? "ibv_poll_cq failed\n" : "%s: no completion after 10 s\n", what);
		return -1;
	}
	if (wc->wr_id != id) { /* a completion is known by its wr_id, never by its place */
		fprintf(stderr, "%s: a completion for wr_id %llu instead\n", what, (unsigned long long)wc->wr_id);
		return -1;
	}
	if (wc->status != IBV_WC_SUCCESS) {
		fprintf(stderr, "%s failed: %s (status %d)\n", what, ibv_wc_status_str(wc->status), wc->status);
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
	struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 4, NULL, NULL, 0) : NULL;
	struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
		.cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_qp *qp = cq ? ibv_create_qp(pd, &ia) : NULL;
	static unsigned char buf[GRH + 256];
	struct ibv_mr *mr = qp ? ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE) : NULL;
	struct ibv_ah *ah = NULL;
	if (!mr) {
		perror("setup (rxe0, PD, CQ, UD QP, MR)");
		goto out;
	}

	/* TODO 1: move the QP to INIT (P_Key index 0, port 1, Q_Key QKEY),
	 * RTR (the state alone) and RTS (and sq_psn), each checked. */

	/* TODO 2: post one RECV of the whole buf (wr_id RECV_ID) before the
	 * exchange: the peer's datagram follows its answer at once. */

	struct ud_info mine = {.qpn = qp->qp_num, .qkey = QKEY}, peer;
	/* TODO 3: fill mine.gid with ibv_query_gid (port 1, GID index 1). */
	if (exchange(&mine, &peer))
		goto out;
	printf("the peer's UD QP %u, Q_Key 0x%x\n", peer.qpn, peer.qkey);

	struct ibv_wc wc;
	/* TODO 4: wait_for(cq, &wc, RECV_ID, "RECV"); print byte_len, the 40
	 * bytes of the GRH area in hex, the IPv4 source and destination in
	 * bytes 32-35 and 36-39 (inet_ntop), and "payload at byte 40". */

	/* TODO 5: make an address handle for peer.gid (is_global 1, port 1,
	 * sgid_index 1, hop_limit 64), SEND the wc.byte_len bytes of buf back
	 * (wr.ud.ah, remote_qpn, remote_qkey; wr_id SEND_ID), wait_for it and
	 * set ret = 0. */
	(void)wc;
	(void)wait_for;
out:
	/* Teardown: the AH and the QP first (nothing may send with them),
	 * then the MR, the CQ, the PD, the device. */
	if (ah)
		ibv_destroy_ah(ah);
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
