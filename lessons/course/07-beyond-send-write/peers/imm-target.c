/* The lab's peer for "WRITE_WITH_IMM as the signal": on rxe1 it registers
 * a 4096-byte buffer for remote writes, posts two RECVs with no buffer at
 * all (the data of a WRITE_WITH_IMM goes where the WRITE says; the RECV
 * only carries the completion) and publishes, in $LAB_PEER_DIR/target,
 * its QP number, PSN, GID (index 1), the buffer's address and rkey. It
 * connects its RC QP once the learner's side has written
 * $LAB_PEER_DIR/initiator ("QPN PSN GID") and says so in
 * $LAB_PEER_DIR/connected. It polls its CQ without pause and, the moment
 * a completion comes, copies what its buffer holds: so the report says
 * what was in place when the signal arrived, not later. When its standard
 * input closes (the lab does that after the learner's program ended) it
 * reports each completion and that copy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <poll.h>
#include <arpa/inet.h>
#include <infiniband/verbs.h>

#define BUF 4096
#define SHOW 48 /* bytes of the buffer copied at each completion */
#define MAXC 4  /* completions recorded */

static const char *dir(void)
{
	const char *d = getenv("LAB_PEER_DIR");
	return d ? d : "/run/lab-peer";
}

static void publish(const char *name, const char *text)
{
	char tmp[256], path[256];
	snprintf(tmp, sizeof tmp, "%s/.%s", dir(), name);
	snprintf(path, sizeof path, "%s/%s", dir(), name);
	FILE *f = fopen(tmp, "w");
	if (!f) {
		perror(tmp);
		exit(1);
	}
	fputs(text, f);
	fclose(f);
	rename(tmp, path);
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

static const char *opname(enum ibv_wc_opcode op)
{
	switch (op) {
	case IBV_WC_RECV:
		return "RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM:
		return "RECV_RDMA_WITH_IMM";
	default:
		return "other";
	}
}

static void printable(const char *b, int n)
{
	putchar('"');
	for (int i = 0; i < n && b[i]; i++)
		putchar(b[i] >= 32 && b[i] < 127 && b[i] != '"' ? b[i] : '.');
	putchar('"');
}

int main(void)
{
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
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	char *buf = calloc(1, BUF);
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 1, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);
	if (!mr || !cq || !qp) {
		perror("peer: setup");
		return 1;
	}
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE};
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
		perror("peer: INIT");
		return 1;
	}
	/* Two RECVs without a scatter list: a WRITE_WITH_IMM consumes one. */
	for (int i = 1; i <= 2; i++) {
		struct ibv_recv_wr r = {.wr_id = i, .num_sge = 0}, *bad;
		if (ibv_post_recv(qp, &r, &bad)) {
			perror("peer: post_recv");
			return 1;
		}
	}
	union ibv_gid gid;
	ibv_query_gid(ctx, 1, 1, &gid);
	char text[256], g[33];
	for (int i = 0; i < 16; i++)
		sprintf(g + 2 * i, "%02x", gid.raw[i]);
	unsigned psn = 5151;
	snprintf(text, sizeof text, "%u %u %s %llu %u %u\n", qp->qp_num, psn, g,
		 (unsigned long long)(uintptr_t)buf, mr->rkey, BUF);
	publish("target", text);
	publish("ready", "1\n");

	int connected = 0, n = 0;
	struct ibv_wc wcs[MAXC];
	static char seen[MAXC][SHOW + 1];
	char path[256];
	snprintf(path, sizeof path, "%s/initiator", dir());
	for (;;) {
		/* Connected, the CQ is polled without a pause, and stdin only
		 * every few hundred polls. */
		struct ibv_wc wc;
		for (int spin = 0; spin < (connected == 1 ? 500 : 1); spin++) {
			if (ibv_poll_cq(cq, 1, &wc) != 1)
				continue;
			if (n < MAXC) { /* the buffer as it is now, at the completion */
				memcpy(seen[n], buf, SHOW);
				wcs[n] = wc;
			}
			n++;
		}
		struct pollfd p = {.fd = 0, .events = POLLIN};
		if (poll(&p, 1, connected == 1 ? 0 : 5) > 0) {
			char c;
			if (read(0, &c, 1) <= 0)
				break; /* the lab asks for the report */
		}
		if (connected)
			continue;
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		unsigned rqpn, rpsn;
		char rg[64];
		int k = fscanf(f, "%u %u %63s", &rqpn, &rpsn, rg);
		fclose(f);
		union ibv_gid dgid;
		if (k != 3 || hexgid(rg, &dgid))
			continue; /* not (yet) "QPN PSN GID": read it again */
		struct ibv_qp_attr r = {.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
			.dest_qp_num = rqpn, .rq_psn = rpsn, .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
			.ah_attr = {.is_global = 1, .port_num = 1,
				    .grh = {.dgid = dgid, .sgid_index = 1, .hop_limit = 64}}};
		struct ibv_qp_attr s = {.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 3,
			.rnr_retry = 3, .sq_psn = psn, .max_rd_atomic = 1};
		if (ibv_modify_qp(qp, &r, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) ||
		    ibv_modify_qp(qp, &s, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)) {
			printf("RTR failed\n");
			connected = -1;
			continue;
		}
		connected = 1;
		publish("connected", "1\n");
	}
	printf("peer on rxe1: QP %u, buffer of %d bytes, rkey 0x%x, 2 RECVs posted\n", qp->qp_num, BUF, mr->rkey);
	printf("connected: %s\n", connected == 1 ? "yes" : "no");
	printf("completions: %d\n", n);
	for (int i = 0; i < n && i < MAXC; i++) {
		struct ibv_wc *w = &wcs[i];
		if (w->status != IBV_WC_SUCCESS) {
			printf("completion %d: status %s\n", i + 1, ibv_wc_status_str(w->status));
			continue;
		}
		printf("completion %d: status success, opcode %s, imm %s, imm_data %u (ntohl), byte_len %u\n", i + 1,
		       opname(w->opcode), (w->wc_flags & IBV_WC_WITH_IMM) ? "yes" : "no",
		       (w->wc_flags & IBV_WC_WITH_IMM) ? ntohl(w->imm_data) : 0, w->byte_len);
		printf("buffer at completion %d: ", i + 1);
		printable(seen[i], SHOW);
		printf("\n");
	}
	printf("buffer at the end: ");
	printable(buf, SHOW);
	printf("\n");
	return 0;
}
