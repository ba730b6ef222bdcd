/* The lab's peer for "RDMA WRITE into the peer's buffer": on rxe1 it
 * registers a 4096-byte buffer for remote writes and publishes, in
 * $LAB_PEER_DIR/target, its QP number, PSN, GID (index 1), the buffer's
 * address and rkey. It connects its RC QP once the learner's side has
 * written $LAB_PEER_DIR/initiator ("QPN PSN GID") and says so in
 * $LAB_PEER_DIR/connected. When its standard input closes (the lab does
 * that after the learner's program ended) it reports what its buffer
 * holds: it never posts a receive, so only a WRITE can have put it there. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <poll.h>
#include <infiniband/verbs.h>

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
	char *buf = calloc(1, 4096);
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};
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
	union ibv_gid gid;
	ibv_query_gid(ctx, 1, 1, &gid);
	char text[256], g[33];
	for (int i = 0; i < 16; i++)
		sprintf(g + 2 * i, "%02x", gid.raw[i]);
	unsigned psn = 4242;
	snprintf(text, sizeof text, "%u %u %s %llu %u %u\n", qp->qp_num, psn, g,
		 (unsigned long long)(uintptr_t)buf, mr->rkey, 4096);
	publish("target", text);
	publish("ready", "1\n");

	int connected = 0;
	char path[256];
	snprintf(path, sizeof path, "%s/initiator", dir());
	for (;;) {
		struct pollfd p = {.fd = 0, .events = POLLIN};
		if (poll(&p, 1, 10) > 0) {
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
		int n = fscanf(f, "%u %u %63s", &rqpn, &rpsn, rg);
		fclose(f);
		union ibv_gid dgid;
		if (n != 3 || hexgid(rg, &dgid))
			continue; /* not (yet) "QPN PSN GID": read it again */
		struct ibv_qp_attr r = {.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
			.dest_qp_num = rqpn, .rq_psn = rpsn, .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
			.ah_attr = {.is_global = 1, .port_num = 1,
				    .grh = {.dgid = dgid, .sgid_index = 1, .hop_limit = 64}}};
		if (ibv_modify_qp(qp, &r, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
			printf("RTR failed\n");
			connected = -1;
			continue;
		}
		/* It never sends, but a model keeps its retries finite too. */
		struct ibv_qp_attr s = {.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 3,
			.rnr_retry = 3, .sq_psn = psn, .max_rd_atomic = 1};
		ibv_modify_qp(qp, &s, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			      IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
		connected = 1;
		publish("connected", "1\n");
	}
	printf("peer on rxe1: QP %u, buffer of 4096 bytes, rkey 0x%x\n", qp->qp_num, mr->rkey);
	printf("connected: %s\n", connected == 1 ? "yes" : "no");
	printf("received: ");
	for (int i = 0; i < 64 && buf[i]; i++)
		putchar(buf[i] >= 32 && buf[i] < 127 ? buf[i] : '.');
	printf("\n");
	return 0;
}
