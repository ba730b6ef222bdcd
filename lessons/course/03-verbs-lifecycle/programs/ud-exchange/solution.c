/* A UD exchange: a UD QP receives the peer's datagram (40 bytes of GRH
 * area, then the payload) and sends it all back through an address handle. */
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

	/* A UD QP has no peer to learn at RTR: INIT takes the port and the
	 * Q_Key that datagrams to it must carry, RTR and RTS only the state
	 * (and RTS a first PSN). */
	struct ibv_qp_attr init = {.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1, .qkey = QKEY};
	struct ibv_qp_attr rtr = {.qp_state = IBV_QPS_RTR};
	struct ibv_qp_attr rts = {.qp_state = IBV_QPS_RTS, .sq_psn = 0};
	if (ibv_modify_qp(qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY)) {
		perror("ibv_modify_qp to INIT");
		goto out;
	}
	if (ibv_modify_qp(qp, &rtr, IBV_QP_STATE)) {
		perror("ibv_modify_qp to RTR");
		goto out;
	}
	if (ibv_modify_qp(qp, &rts, IBV_QP_STATE | IBV_QP_SQ_PSN)) {
		perror("ibv_modify_qp to RTS");
		goto out;
	}
	printf("our UD QP %u is in RTS\n", qp->qp_num);

	/* The RECV goes first: UD has no RNR NAK, and a datagram that finds
	 * no receive waiting is dropped without a word. */
	struct ibv_sge rsge = {.addr = (uintptr_t)buf, .length = sizeof buf, .lkey = mr->lkey};
	struct ibv_recv_wr rwr = {.wr_id = RECV_ID, .sg_list = &rsge, .num_sge = 1}, *rbad;
	int err = ibv_post_recv(qp, &rwr, &rbad);
	if (err) {
		fprintf(stderr, "ibv_post_recv: %s\n", strerror(err));
		goto out;
	}
	struct ud_info mine = {.qpn = qp->qp_num, .qkey = QKEY}, peer;
	if (ibv_query_gid(ctx, 1, 1, &mine.gid)) { /* index 1: rxe's IPv4 (RoCEv2) entry */
		perror("ibv_query_gid");
		goto out;
	}
	if (exchange(&mine, &peer))
		goto out;
	printf("the peer's UD QP %u, Q_Key 0x%x\n", peer.qpn, peer.qkey);

	struct ibv_wc wc;
	if (wait_for(cq, &wc, RECV_ID, "RECV"))
		goto out;
	if (wc.byte_len <= GRH) {
		fprintf(stderr, "RECV of %u bytes: no payload after the GRH area\n", wc.byte_len);
		goto out;
	}
	/* byte_len counts the GRH area. On RoCEv2 over IPv4 its first 20
	 * bytes are unused and bytes 20 to 39 are the packet's IPv4 header. */
	printf("received %u bytes from QP %u; the GRH area:\n", wc.byte_len, wc.src_qp);
	for (int i = 0; i < GRH; i++)
		printf("%02x%s", buf[i], i % 20 == 19 ? "\n" : " ");
	char src[16], dst[16];
	inet_ntop(AF_INET, buf + 32, src, sizeof src);
	inet_ntop(AF_INET, buf + 36, dst, sizeof dst);
	printf("IPv4 header at bytes 20-39: %s -> %s\n", src, dst);
	printf("payload at byte %d, %u bytes: %.*s\n", GRH, wc.byte_len - GRH, (int)(wc.byte_len - GRH - 1), buf + GRH);

	/* Send it all back, GRH area included: the address handle names the
	 * peer's GID, the request its QP and Q_Key. */
	struct ibv_ah_attr aa = {.is_global = 1, .port_num = 1,
		.grh = {.dgid = peer.gid, .sgid_index = 1, .hop_limit = 64}};
	ah = ibv_create_ah(pd, &aa);
	if (!ah) {
		perror("ibv_create_ah");
		goto out;
	}
	struct ibv_sge ssge = {.addr = (uintptr_t)buf, .length = wc.byte_len, .lkey = mr->lkey};
	struct ibv_send_wr swr = {.wr_id = SEND_ID, .sg_list = &ssge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED}, *sbad;
	swr.wr.ud.ah = ah;
	swr.wr.ud.remote_qpn = peer.qpn;
	swr.wr.ud.remote_qkey = peer.qkey;
	err = ibv_post_send(qp, &swr, &sbad);
	if (err) {
		fprintf(stderr, "ibv_post_send: %s\n", strerror(err));
		goto out;
	}
	/* A UD SEND completes once it has left: nothing acknowledges it. */
	if (wait_for(cq, &wc, SEND_ID, "SEND"))
		goto out;
	printf("sent the %u bytes back to QP %u\n", ssge.length, peer.qpn);
	ret = 0;
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
