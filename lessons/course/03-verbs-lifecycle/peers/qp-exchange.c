/* The lab's peer for "connect a QP by hand": on rxe1 it creates an RC QP,
 * moves it to INIT, posts one RECV and listens on TCP (argv[1], port
 * argv[2]). The learner's program connects, sends one line
 * "QPN PSN GID" (GID as 32 hex digits) and reads the peer's own line
 * back; only then has the peer moved its QP to RTR and RTS towards the
 * learner's, so a SEND after the reply finds the RECV waiting. When its
 * standard input closes (the lab does that after the learner's program
 * ended) it reports what it got on the socket and what its RECV received:
 * evidence the learner's program cannot print. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <poll.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <infiniband/verbs.h>

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

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: qp-exchange ADDR PORT\n");
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
	/* The RECV is posted in INIT, before anyone knows the learner's QP. */
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = sizeof buf - 1, .lkey = mr->lkey};
	struct ibv_recv_wr rwr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1}, *bad;
	if (ibv_post_recv(qp, &rwr, &bad)) {
		perror("peer: post_recv");
		return 1;
	}
	union ibv_gid gid;
	if (ibv_query_gid(ctx, 1, 1, &gid)) {
		perror("peer: query_gid");
		return 1;
	}
	unsigned psn = 7000;
	char mine[128];
	int n = snprintf(mine, sizeof mine, "%u %u ", qp->qp_num, psn);
	for (int i = 0; i < 16; i++)
		n += snprintf(mine + n, sizeof mine - n, "%02x", gid.raw[i]);
	snprintf(mine + n, sizeof mine - n, "\n");

	int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[2]))};
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1 || bind(ls, (void *)&sa, sizeof sa) || listen(ls, 1)) {
		perror("peer: listen");
		return 1;
	}
	publish("ready");

	int cs = -1, connected = 0, got = 0;
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
		if (!got && ibv_poll_cq(cq, 1, &wc) == 1) {
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
				.dest_qp_num = rqpn, .rq_psn = rpsn, .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
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
				connected = 1; /* the peer's QP is in RTS: answer */
				if (write(cs, mine, strlen(mine)) < 0)
					connected = -3;
			}
		}
		close(cs);
		cs = -1;
	}
	printf("peer on rxe1: QP %u, PSN %u, TCP %s:%s\n", qp->qp_num, psn, argv[1], argv[2]);
	char *nl = strchr(line, '\n');
	if (nl)
		*nl = 0;
	if (len == 0)
		printf("exchange: nothing\n");
	else
		printf("exchange: QPN %u PSN %u GID %s (the line: \"%.80s\")\n", rqpn, rpsn, rg, line);
	printf("connected: %s\n", connected == 1 ? "yes" : connected == -1 ? "no, the line was not \"QPN PSN GID\"" :
	       connected == -2 ? "no, RTR/RTS failed" : connected == -3 ? "no, the reply could not be sent" : "no");
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
