/* The lab's peer for "a UD exchange": on rxe1 it creates a UD QP (Q_Key
 * 0x11111111) in RTS with one RECV posted and listens on TCP (argv[1],
 * port argv[2]). The learner's program connects and sends one line
 * "QPN QKEY GID"; the peer answers with its own line, makes an address
 * handle for the learner's GID and SENDs one datagram, "ud token "
 * and 8 random hex digits, to the learner's QP. The learner sends back
 * everything its RECV got, the 40-byte GRH area included. When its
 * standard input closes (the lab does that after the learner's program
 * ended) the peer reports what it sent and what came back, from which QP:
 * evidence the learner's program cannot print. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <poll.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <infiniband/verbs.h>

#define QKEY 0x11111111
#define GRH 40

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
		fprintf(stderr, "usage: ud-exchange ADDR PORT\n");
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
	static char rbuf[1024], sbuf[64];
	struct ibv_mr *rmr = pd ? ibv_reg_mr(pd, rbuf, sizeof rbuf, IBV_ACCESS_LOCAL_WRITE) : NULL;
	struct ibv_mr *smr = pd ? ibv_reg_mr(pd, sbuf, sizeof sbuf, 0) : NULL;
	struct ibv_cq *cq = ctx ? ibv_create_cq(ctx, 4, NULL, NULL, 0) : NULL;
	struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
		.cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_qp *qp = rmr && smr && cq ? ibv_create_qp(pd, &ia) : NULL;
	if (!qp) {
		perror("peer: setup");
		return 1;
	}
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY};
	struct ibv_qp_attr r = {.qp_state = IBV_QPS_RTR};
	struct ibv_qp_attr s = {.qp_state = IBV_QPS_RTS, .sq_psn = 7000};
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY) ||
	    ibv_modify_qp(qp, &r, IBV_QP_STATE) || ibv_modify_qp(qp, &s, IBV_QP_STATE | IBV_QP_SQ_PSN)) {
		perror("peer: INIT, RTR, RTS");
		return 1;
	}
	struct ibv_sge rsge = {.addr = (uintptr_t)rbuf, .length = sizeof rbuf, .lkey = rmr->lkey};
	struct ibv_recv_wr rwr = {.wr_id = 1, .sg_list = &rsge, .num_sge = 1}, *rbad;
	if (ibv_post_recv(qp, &rwr, &rbad)) {
		perror("peer: post_recv");
		return 1;
	}
	union ibv_gid gid;
	if (ibv_query_gid(ctx, 1, 1, &gid)) {
		perror("peer: query_gid");
		return 1;
	}
	unsigned char rnd[4] = {0};
	int fd = open("/dev/urandom", O_RDONLY);
	if (fd < 0 || read(fd, rnd, sizeof rnd) != sizeof rnd) {
		perror("peer: /dev/urandom");
		return 1;
	}
	close(fd);
	int tlen = snprintf(sbuf, sizeof sbuf, "ud token %02x%02x%02x%02x", rnd[0], rnd[1], rnd[2], rnd[3]) + 1;
	char mine[128];
	int n = snprintf(mine, sizeof mine, "%u %x ", qp->qp_num, QKEY); /* the Q_Key in hex, as the learner's */
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

	int cs = -1, done = 0, sent = 0, got = 0;
	char line[256] = "", status[64] = "", sstatus[64] = "";
	size_t len = 0;
	unsigned rqpn = 0, rqkey = 0;
	char rg[64] = "";
	struct ibv_ah *ah = NULL;
	struct ibv_wc wc, rwc;
	for (;;) {
		struct pollfd p[3] = {{.fd = 0, .events = POLLIN}, {.fd = ls, .events = POLLIN},
			{.fd = cs, .events = POLLIN}};
		poll(p, cs < 0 ? 2 : 3, 5);
		if (p[0].revents) {
			char c;
			if (read(0, &c, 1) <= 0)
				break; /* the lab asks for the report */
		}
		while (ibv_poll_cq(cq, 1, &wc) == 1) {
			if (wc.wr_id == 1) { /* our RECV: what the learner sent back */
				got = 1;
				rwc = wc;
				if (wc.status != IBV_WC_SUCCESS)
					snprintf(status, sizeof status, "%s", ibv_wc_status_str(wc.status));
			} else if (wc.wr_id == 2 && wc.status != IBV_WC_SUCCESS) {
				snprintf(sstatus, sizeof sstatus, "%s", ibv_wc_status_str(wc.status));
			}
		}
		if (cs < 0 && !done && (p[1].revents & POLLIN))
			cs = accept(ls, NULL, NULL);
		if (cs < 0 || !(p[2].revents & (POLLIN | POLLHUP)))
			continue;
		ssize_t rd = read(cs, line + len, sizeof line - 1 - len);
		if (rd > 0)
			len += rd;
		line[len] = 0;
		if (rd > 0 && !strchr(line, '\n') && len < sizeof line - 1)
			continue; /* not a whole line yet */
		done = 1;
		struct ibv_ah_attr aa = {.is_global = 1, .port_num = 1,
			.grh = {.sgid_index = 1, .hop_limit = 64}};
		if (sscanf(line, "%u %x %63s", &rqpn, &rqkey, rg) == 3 && !hexgid(rg, &aa.grh.dgid))
			ah = ibv_create_ah(pd, &aa);
		/* Answered only with an address to send to: the datagram follows
		 * the answer at once, so the learner's RECV must already wait. */
		if (ah && write(cs, mine, strlen(mine)) > 0) {
			struct ibv_sge ssge = {.addr = (uintptr_t)sbuf, .length = tlen, .lkey = smr->lkey};
			struct ibv_send_wr swr = {.wr_id = 2, .sg_list = &ssge, .num_sge = 1,
				.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED}, *sbad;
			swr.wr.ud.ah = ah;
			swr.wr.ud.remote_qpn = rqpn;
			swr.wr.ud.remote_qkey = rqkey;
			sent = ibv_post_send(qp, &swr, &sbad) == 0;
		}
		close(cs);
		cs = -1;
	}
	printf("peer on rxe1: UD QP %u, Q_Key 0x%x, TCP %s:%s\n", qp->qp_num, QKEY, argv[1], argv[2]);
	char *nl = strchr(line, '\n');
	if (nl)
		*nl = 0;
	if (len == 0)
		printf("exchange: nothing\n");
	else
		printf("exchange: QPN %u QKEY 0x%x GID %s (the line: \"%.80s\")\n", rqpn, rqkey, rg, line);
	if (sent)
		printf("sent: %s to QP %u%s%s\n", sbuf, rqpn, sstatus[0] ? ", failed: " : "", sstatus);
	else
		printf("sent: nothing (no usable \"QPN QKEY GID\" line, or no address handle)\n");
	if (!got) {
		printf("received: nothing\n");
		return 0;
	}
	if (status[0]) {
		printf("receive failed: %s\n", status);
		return 0;
	}
	/* rbuf: our GRH area (40), then what the learner sent: its own GRH
	 * area (40) and the payload it received. */
	unsigned char *back = (unsigned char *)rbuf + GRH;
	unsigned blen = rwc.byte_len > GRH ? rwc.byte_len - GRH : 0;
	printf("received: %u bytes from QP %u%s\n", blen, rwc.src_qp, rwc.src_qp == rqpn ? " (the learner's)" : "");
	if (blen > GRH && sent) {
		char src[16], dst[16];
		inet_ntop(AF_INET, back + 32, src, sizeof src);
		inet_ntop(AF_INET, back + 36, dst, sizeof dst);
		printf("echo GRH: IPv4 %s -> %s\n", src, dst);
		char *payload = (char *)back + GRH;
		payload[blen - GRH < 64 ? blen - GRH : 63] = 0;
		printf("echo payload: %s\n", !strcmp(payload, sbuf) ? "the token sent" : "not the token sent");
	} else {
		printf("echo: too short to hold a 40-byte GRH area and the token\n");
	}
	return 0;
}
