/* The lab's peer for "survive a late RECV": an RC QP on rxe1 that trades
 * QPN, PSN and GID over TCP (argv[1], port argv[2]) like lesson 03's, and
 * adds a token, fresh on every run, that the learner's SEND must carry
 * back. It posts no RECV until its device has answered the learner's SEND
 * with an RNR NAK: it watches rxe1's send_rnr_err counter, and posts its
 * one RECV LATE_MS after the counter first moved. So every SEND meets an
 * empty receive queue first, however late it is sent, and only a
 * requester that keeps retrying gets through. When its standard input
 * closes (the lab does that after the learner's program ended) it reports
 * the token, the exchange, when the first RNR NAK was seen, when the RECV
 * was posted and what it received: evidence the learner's program cannot
 * print. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <poll.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <infiniband/verbs.h>

#define LATE_MS 300       /* the RECV comes this long after the first RNR NAK */
#define MIN_RNR_TIMER 12  /* carried in our RNR NAKs: 0.64 ms (IBTA's table) */

static void publish(const char *name)
{
	const char *d = getenv("LAB_PEER_DIR");
	char path[256];
	snprintf(path, sizeof path, "%s/%s", d ? d : "/run/lab-peer", name);
	FILE *f = fopen(path, "w");
	if (f) {
		fputs("1\n", f);
		fclose(f);
	}
}

static int hexgid(const char *s, union ibv_gid *g)
{
	if (strlen(s) != 32)
		return -1;
	for (int i = 0; i < 16; i++) {
		unsigned v;
		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -1;
		g->raw[i] = v;
	}
	return 0;
}

/* send_rnr reads rxe1's count of RNR NAKs sent; -1 if it cannot. The
 * kernel refreshes hw_counters at most every 10 ms or so: a value can be
 * that old, never newer. */
static long send_rnr(void)
{
	FILE *f = fopen("/sys/class/infiniband/rxe1/ports/1/hw_counters/send_rnr_err", "r");
	long v = -1;
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static long now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000L + t.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: rnr-late ADDR PORT\n");
		return 2;
	}
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device *dev = NULL;
	for (int i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), "rxe1"))
			dev = list[i];
	if (!dev) {
		fprintf(stderr, "peer: no rxe1\n");
		return 1;
	}
	struct ibv_context *ctx = ibv_open_device(dev);
	struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	static char buf[256];
	struct ibv_mr *mr = pd ? ibv_reg_mr(pd, buf, sizeof buf - 1, IBV_ACCESS_LOCAL_WRITE) : NULL;
	struct ibv_cq *cq = ctx ? ibv_create_cq(ctx, 4, NULL, NULL, 0) : NULL;
	struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_qp *qp = mr && cq ? ibv_create_qp(pd, &ia) : NULL;
	if (!qp) {
		perror("peer: setup");
		return 1;
	}
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1};
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
		perror("peer: INIT");
		return 1;
	}
	union ibv_gid gid;
	if (ibv_query_gid(ctx, 1, 1, &gid)) {
		perror("peer: query_gid");
		return 1;
	}
	/* The token: 8 hex digits from the kernel's random pool, new each run. */
	unsigned tok = 0;
	int rf = open("/dev/urandom", O_RDONLY);
	if (rf < 0 || read(rf, &tok, sizeof tok) != sizeof tok)
		tok = (unsigned)time(NULL) ^ (unsigned)getpid() << 16;
	if (rf >= 0)
		close(rf);
	char token[16];
	snprintf(token, sizeof token, "%08x", tok);
	unsigned psn = 7000;
	char mine[128];
	int n = snprintf(mine, sizeof mine, "%u %u ", qp->qp_num, psn);
	for (int i = 0; i < 16; i++)
		n += snprintf(mine + n, sizeof mine - n, "%02x", gid.raw[i]);
	snprintf(mine + n, sizeof mine - n, " %s\n", token);

	int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[2]))};
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1 || bind(ls, (void *)&sa, sizeof sa) || listen(ls, 1)) {
		perror("peer: listen");
		return 1;
	}
	publish("ready");

	int cs = -1, connected = 0, got = 0, posted = 0, recv_err = 0;
	long replied = 0, first_nak = 0, posted_at = 0, base = -1;
	char line[256] = "", status[64] = "";
	size_t len = 0;
	unsigned rqpn = 0, rpsn = 0;
	char rg[64] = "";
	struct ibv_wc wc;
	for (;;) {
		struct pollfd p[3] = {{.fd = 0, .events = POLLIN}, {.fd = ls, .events = POLLIN},
			{.fd = cs, .events = POLLIN}};
		poll(p, cs < 0 ? 2 : 3, 5);
		if (p[0].revents) {
			char c;
			if (read(0, &c, 1) <= 0)
				break; /* the lab asks for the report */
		}
		/* Connected, no RECV yet: has rxe1 answered a SEND with an RNR NAK? */
		if (connected == 1 && !posted) {
			long v = base >= 0 ? send_rnr() : 0;
			if (!first_nak && (base < 0 || v > base))
				first_nak = base < 0 ? replied : now_ms(); /* unreadable: time from the answer */
			if (first_nak && now_ms() - first_nak >= LATE_MS) {
				struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = sizeof buf - 1, .lkey = mr->lkey};
				struct ibv_recv_wr rwr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1}, *bad;
				posted = 1;
				posted_at = now_ms();
				if (ibv_post_recv(qp, &rwr, &bad))
					recv_err = 1;
			}
		}
		if (posted && !got && ibv_poll_cq(cq, 1, &wc) == 1) {
			got = 1;
			if (wc.status != IBV_WC_SUCCESS)
				snprintf(status, sizeof status, "%s", ibv_wc_status_str(wc.status));
			else
				buf[wc.byte_len < sizeof buf ? wc.byte_len : sizeof buf - 1] = 0;
		}
		if (cs < 0 && !connected && (p[1].revents & POLLIN))
			cs = accept(ls, NULL, NULL);
		if (cs < 0 || !(p[2].revents & (POLLIN | POLLHUP)))
			continue;
		ssize_t r = read(cs, line + len, sizeof line - 1 - len);
		if (r > 0)
			len += r;
		line[len] = 0;
		if (r > 0 && !strchr(line, '\n') && len < sizeof line - 1)
			continue; /* not a whole line yet */
		/* A whole line, or the learner closed the socket: one exchange only. */
		union ibv_gid dgid;
		if (sscanf(line, "%u %u %63s", &rqpn, &rpsn, rg) != 3 || hexgid(rg, &dgid)) {
			connected = -1; /* not "QPN PSN GID": reported below */
		} else {
			struct ibv_qp_attr rtr = {.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
				.dest_qp_num = rqpn, .rq_psn = rpsn, .max_dest_rd_atomic = 1,
				.min_rnr_timer = MIN_RNR_TIMER,
				.ah_attr = {.is_global = 1, .port_num = 1,
					    .grh = {.dgid = dgid, .sgid_index = 1, .hop_limit = 64}}};
			struct ibv_qp_attr rts = {.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 3,
				.rnr_retry = 3, .sq_psn = psn, .max_rd_atomic = 1};
			if (ibv_modify_qp(qp, &rtr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) ||
			    ibv_modify_qp(qp, &rts, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)) {
				connected = -2;
			} else {
				base = send_rnr(); /* before the answer: no SEND can have come yet */
				connected = 1;     /* the peer's QP is in RTR, no RECV posted: answer */
				replied = now_ms();
				if (write(cs, mine, strlen(mine)) < 0)
					connected = -3;
			}
		}
		close(cs);
		cs = -1;
	}
	printf("peer on rxe1: QP %u, PSN %u, TCP %s:%s, min_rnr_timer %d\n", qp->qp_num, psn, argv[1], argv[2],
	       MIN_RNR_TIMER);
	printf("token: %s\n", token);
	char *nl = strchr(line, '\n');
	if (nl)
		*nl = 0;
	if (len == 0)
		printf("exchange: nothing\n");
	else
		printf("exchange: QPN %u PSN %u GID %s (the line: \"%.80s\")\n", rqpn, rpsn, rg, line);
	printf("connected: %s\n", connected == 1 ? "yes" : connected == -1 ? "no, the line was not \"QPN PSN GID\"" :
	       connected == -2 ? "no, RTR/RTS failed" : connected == -3 ? "no, the reply could not be sent" : "no");
	if (base < 0 && connected == 1)
		printf("first RNR NAK: unknown, rxe1's send_rnr_err cannot be read; the RECV timed from the answer\n");
	else if (first_nak)
		printf("first RNR NAK: %ld ms after the answer\n", first_nak - replied);
	else if (connected == 1)
		printf("first RNR NAK: none\n");
	if (posted)
		printf("RECV posted: %ld ms after the first RNR NAK%s\n", posted_at - first_nak,
		       recv_err ? ", and ibv_post_recv failed" : "");
	else if (connected == 1)
		printf("RECV posted: never\n");
	if (!got)
		printf("received: nothing\n");
	else if (status[0])
		printf("receive failed: %s\n", status);
	else {
		printf("received: ");
		for (int i = 0; buf[i]; i++)
			putchar(buf[i] >= 32 && buf[i] < 127 ? buf[i] : '.');
		printf(" (%u bytes)\n", wc.byte_len);
	}
	return 0;
}
