/* The lab's peer for "an SRQ server": three clients on rxe1, each an RC
 * QP of its own, that send requests to the learner's server and wait for
 * the answers. It publishes, in $LAB_PEER_DIR/clients, one line per
 * client, "QPN PSN GID", and connects client i to the server's QP on line
 * i of $LAB_PEER_DIR/server (written by the learner's program, same form),
 * saying so in $LAB_PEER_DIR/connected. Then each client sends, one at a
 * time, MESSAGES requests "ping C.M NONCE" (NONCE changes every run) and
 * waits for the answer "pong C.M NONCE" on its own QP before the next:
 * nine requests in all, up to three in flight, arriving on three server
 * QPs. When its standard input closes it reports what each client got:
 * evidence the learner's program cannot print. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <poll.h>
#include <infiniband/verbs.h>

#define CLIENTS 3
#define MESSAGES 3
#define MSG 64

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

struct client {
	struct ibv_qp *qp;
	char sbuf[MSG], rbuf[MSG];
	int sent, answered;            /* requests sent, right answers got */
	char wrong[MSG + 32];          /* the first wrong answer, printable */
	char failed[96];               /* the first failed completion */
};

static struct client cl[CLIENTS];
static struct ibv_mr *mr;
static unsigned nonce;

/* wr_ids: client * 2 + 0 for its SEND, + 1 for its RECV. */
static int post_recv(int c)
{
	struct ibv_sge sge = {.addr = (uintptr_t)cl[c].rbuf, .length = MSG, .lkey = mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = c * 2 + 1, .sg_list = &sge, .num_sge = 1}, *bad;
	memset(cl[c].rbuf, 0, MSG);
	return ibv_post_recv(cl[c].qp, &wr, &bad);
}

static int send_next(int c)
{
	struct client *k = &cl[c];
	int n = snprintf(k->sbuf, MSG, "ping %d.%d %08x", c, k->sent, nonce);
	struct ibv_sge sge = {.addr = (uintptr_t)k->sbuf, .length = n + 1, .lkey = mr->lkey};
	struct ibv_send_wr wr = {.wr_id = c * 2, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED}, *bad;
	if (post_recv(c) || ibv_post_send(k->qp, &wr, &bad))
		return -1;
	k->sent++;
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
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	nonce = (unsigned)(now.tv_nsec ^ (now.tv_sec << 12) ^ getpid());
	struct ibv_context *ctx = ibv_open_device(dev);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	mr = ibv_reg_mr(pd, cl, sizeof cl, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_cq *cq = ibv_create_cq(ctx, 4 * CLIENTS, NULL, NULL, 0);
	union ibv_gid gid;
	if (!mr || !cq || ibv_query_gid(ctx, 1, 1, &gid)) {
		perror("peer: setup");
		return 1;
	}
	char g[33], text[512] = "";
	for (int i = 0; i < 16; i++)
		sprintf(g + 2 * i, "%02x", gid.raw[i]);
	for (int c = 0; c < CLIENTS; c++) {
		struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = {.max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1}};
		cl[c].qp = ibv_create_qp(pd, &ia);
		struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1};
		if (!cl[c].qp || ibv_modify_qp(cl[c].qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
			perror("peer: client QP");
			return 1;
		}
		snprintf(text + strlen(text), sizeof text - strlen(text), "%u %u %s\n", cl[c].qp->qp_num, 7100 + c, g);
	}
	publish("clients", text);
	publish("ready", "1\n");

	int connected = 0, fail = 0;
	char path[256], why[128] = "";
	snprintf(path, sizeof path, "%s/server", dir());
	for (;;) {
		struct pollfd p = {.fd = 0, .events = POLLIN};
		if (poll(&p, 1, connected == 1 ? 1 : 5) > 0) {
			char c;
			if (read(0, &c, 1) <= 0)
				break; /* the lab asks for the report */
		}
		struct ibv_wc wc;
		while (connected == 1 && ibv_poll_cq(cq, 1, &wc) == 1) {
			int c = wc.wr_id / 2;
			if (c < 0 || c >= CLIENTS)
				continue;
			struct client *k = &cl[c];
			if (wc.status != IBV_WC_SUCCESS) {
				if (!k->failed[0])
					snprintf(k->failed, sizeof k->failed, "%s %s", wc.wr_id % 2 ? "receive" : "send",
						 ibv_wc_status_str(wc.status));
				continue;
			}
			if (wc.wr_id % 2 == 0)
				continue; /* its SEND is done; the answer is what counts */
			char want[MSG];
			snprintf(want, sizeof want, "pong %d.%d %08x", c, k->sent - 1, nonce);
			k->rbuf[MSG - 1] = 0;
			if (!strcmp(k->rbuf, want)) {
				k->answered++;
			} else if (!k->wrong[0]) {
				int n = snprintf(k->wrong, sizeof k->wrong, "\"");
				for (int i = 0; i < 40 && k->rbuf[i]; i++)
					k->wrong[n++] = k->rbuf[i] >= 32 && k->rbuf[i] < 127 && k->rbuf[i] != '"' ? k->rbuf[i] : '.';
				snprintf(k->wrong + n, sizeof k->wrong - n, "\" (wanted \"%s\")", want);
			}
			/* The next request goes out once this one is answered,
			 * right or wrong: the server's mistakes are counted,
			 * not waited on. */
			if (k->sent < MESSAGES && send_next(c) && !k->failed[0])
				snprintf(k->failed, sizeof k->failed, "could not post request %d", k->sent);
		}
		if (connected)
			continue;
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		unsigned qpn[CLIENTS], psn[CLIENTS];
		union ibv_gid dgid[CLIENTS];
		int ok = 1;
		for (int c = 0; c < CLIENTS && ok; c++) {
			char rg[64];
			ok = fscanf(f, "%u %u %63s", &qpn[c], &psn[c], rg) == 3 && !hexgid(rg, &dgid[c]);
		}
		fclose(f);
		if (!ok)
			continue; /* not (yet) three lines "QPN PSN GID": read it again */
		for (int c = 0; c < CLIENTS && !fail; c++) {
			struct ibv_qp_attr r = {.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
				.dest_qp_num = qpn[c], .rq_psn = psn[c], .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
				.ah_attr = {.is_global = 1, .port_num = 1,
					    .grh = {.dgid = dgid[c], .sgid_index = 1, .hop_limit = 64}}};
			/* Finite RNR retries: a server that has no receive
			 * posted makes this client's request fail, visibly. */
			struct ibv_qp_attr s = {.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 3,
				.rnr_retry = 5, .sq_psn = 7100 + c, .max_rd_atomic = 1};
			if (ibv_modify_qp(cl[c].qp, &r, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) ||
			    ibv_modify_qp(cl[c].qp, &s, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)) {
				snprintf(why, sizeof why, "client %d could not connect to QP %u", c, qpn[c]);
				fail = 1;
			}
		}
		if (fail) {
			connected = -1;
			continue;
		}
		connected = 1;
		publish("connected", "1\n");
		for (int c = 0; c < CLIENTS; c++)
			if (send_next(c) && !cl[c].failed[0])
				snprintf(cl[c].failed, sizeof cl[c].failed, "could not post request 0");
	}
	printf("peer on rxe1: %d clients, QPs", CLIENTS);
	for (int c = 0; c < CLIENTS; c++)
		printf(" %u", cl[c].qp->qp_num);
	printf(", %d requests each\n", MESSAGES);
	printf("connected: %s\n", connected == 1 ? "yes" : connected == -1 ? why : "no");
	int all = 0;
	for (int c = 0; c < CLIENTS; c++) {
		struct client *k = &cl[c];
		printf("client %d: %d of %d answered", c, k->answered, MESSAGES);
		if (k->wrong[0])
			printf("; a wrong answer: %s", k->wrong);
		if (k->failed[0])
			printf("; %s", k->failed);
		printf("\n");
		all += k->answered;
	}
	printf("answered: %d of %d\n", all, CLIENTS * MESSAGES);
	return 0;
}
