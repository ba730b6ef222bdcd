/* ---------------------------------------------------------------- *
 * Lesson 09's naive all-reduce, a test fixture (program09_test.go): *
 * the solution's harness glue (lab_init … lab_store) goes above.    *
 * Every rank WRITEs its whole vector to rank 0, rank 0 adds them up *
 * and WRITEs the sum back to every rank: a star, not a ring.        *
 * ---------------------------------------------------------------- */
#define GRQ 16 /* receives kept posted on each QP */

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_comp_channel *chan;
static struct ibv_cq *cq;
static struct ibv_qp *qp[MAXRANKS]; /* rank 0: qp[k] to rank k; rank k: qp[0] */
static struct ibv_mr *mr;
static float *buf;   /* the vector, reduced in place */
static float *stage; /* rank 0: rank k's vector lands at stage + (k - 1) * maxn */
static uint64_t peer_buf[MAXRANKS], peer_stage;
static uint32_t peer_rkey[MAXRANKS];
static int posted[MAXRANKS], sends_out;
static unsigned char arrived[MAXRANKS + 1];

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* card-r: "QPN_0 … QPN_{n-1} GID BUF STAGE RKEY"; rank 0's QPN_k talks
 * to rank k, rank k's QPN_0 to rank 0 (the others are 0). */
static void publish_card(void)
{
	union ibv_gid g;
	if (ibv_query_gid(ctx, 1, 1, &g))
		die("ibv_query_gid");
	char tmp[160], p[160];
	snprintf(tmp, sizeof tmp, "%s/.card-%d", lab_dir, rank);
	snprintf(p, sizeof p, "%s/card-%d", lab_dir, rank);
	FILE *f = fopen(tmp, "w");
	if (!f)
		die(tmp);
	for (int k = 0; k < nranks; k++)
		fprintf(f, "%u ", qp[k] ? qp[k]->qp_num : 0);
	for (int i = 0; i < 16; i++)
		fprintf(f, "%02x", g.raw[i]);
	fprintf(f, " %llu %llu %u\n", (unsigned long long)(uintptr_t)buf, (unsigned long long)(uintptr_t)stage, mr->rkey);
	if (fclose(f) || rename(tmp, p))
		die(p);
}

/* read_card reads rank r's card: its QPN that talks to us, GID, buffers. */
static void read_card(int r, unsigned *qpn, char *gid, unsigned long long *b, unsigned long long *s, unsigned *rkey)
{
	char p[160];
	snprintf(p, sizeof p, "%s/card-%d", lab_dir, r);
	for (int i = 0; access(p, F_OK); i++) {
		if (i == 1000) {
			fprintf(stderr, "rank %d: no %s after 10 s\n", rank, p);
			exit(1);
		}
		usleep(10000);
	}
	FILE *f = fopen(p, "r");
	if (!f)
		die(p);
	unsigned q[MAXRANKS];
	for (int k = 0; k < nranks; k++)
		if (fscanf(f, "%u", &q[k]) != 1)
			die(p);
	if (fscanf(f, "%32s %llu %llu %u", gid, b, s, rkey) != 4)
		die(p);
	fclose(f);
	*qpn = q[rank];
}

static void connect_qp(struct ibv_qp *q, unsigned qpn, const char *hex)
{
	union ibv_gid gid;
	for (int i = 0; i < 16; i++) {
		unsigned v;
		sscanf(hex + 2 * i, "%2x", &v);
		gid.raw[i] = v;
	}
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE};
	if (ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("ibv_modify_qp to INIT");
	struct ibv_qp_attr r = {.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = qpn, .rq_psn = 1000, .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
		.ah_attr = {.is_global = 1, .port_num = 1, .grh = {.dgid = gid, .sgid_index = 1, .hop_limit = 64}}};
	if (ibv_modify_qp(q, &r, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("ibv_modify_qp to RTR");
	struct ibv_qp_attr s = {.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 3,
		.rnr_retry = 3, .sq_psn = 1000, .max_rd_atomic = 1};
	if (ibv_modify_qp(q, &s, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		die("ibv_modify_qp to RTS");
}

static void setup(void)
{
	char name[8];
	snprintf(name, sizeof name, "rxe%d", rank % 2);
	struct ibv_device **list = ibv_get_device_list(NULL);
	for (int i = 0; list && list[i] && !ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!ctx)
		die(name);
	pd = ibv_alloc_pd(ctx);
	chan = pd ? ibv_create_comp_channel(ctx) : NULL;
	cq = chan ? ibv_create_cq(ctx, 2 * GRQ * MAXRANKS, NULL, chan, 0) : NULL;
	if (!cq || ibv_req_notify_cq(cq, 0))
		die("ibv_alloc_pd/ibv_create_comp_channel/ibv_create_cq");
	struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = GRQ, .max_recv_wr = GRQ, .max_send_sge = 1, .max_recv_sge = 1}};
	for (int k = 0; k < nranks; k++)
		if (rank == 0 ? k != 0 : k == 0)
			if (!(qp[k] = ibv_create_qp(pd, &ia)))
				die("ibv_create_qp");
	size_t len = (size_t)nranks * maxn * sizeof(float);
	buf = calloc(1, len);
	stage = buf + maxn;
	mr = buf ? ibv_reg_mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) : NULL;
	if (!mr)
		die("ibv_reg_mr");
	publish_card();
	for (int k = 0; k < nranks; k++) {
		if (!qp[k])
			continue;
		unsigned qpn, rkey;
		char gid[33];
		unsigned long long b, s;
		read_card(k, &qpn, gid, &b, &s, &rkey);
		connect_qp(qp[k], qpn, gid);
		peer_buf[k] = b, peer_rkey[k] = rkey;
		if (k == 0)
			peer_stage = s;
	}
}

static void post_recvs(void)
{
	memset(arrived, 0, sizeof arrived);
	for (int k = 0; k < nranks; k++)
		while (qp[k] && posted[k] < GRQ) {
			struct ibv_recv_wr wr = {.wr_id = 0}, *bad;
			if (ibv_post_recv(qp[k], &wr, &bad))
				die("ibv_post_recv");
			posted[k]++;
		}
}

static void poll_one(void)
{
	struct ibv_wc wc;
	for (;;) {
		int n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0)
			die("ibv_poll_cq");
		if (n == 1)
			break;
		struct pollfd pf = {.fd = chan->fd, .events = POLLIN};
		int r = poll(&pf, 1, 10000);
		if (r <= 0) {
			fprintf(stderr, "rank %d: no completion after 10 s\n", rank);
			exit(1);
		}
		struct ibv_cq *ecq;
		void *ectx;
		if (ibv_get_cq_event(chan, &ecq, &ectx))
			die("ibv_get_cq_event");
		ibv_ack_cq_events(ecq, 1);
		if (ibv_req_notify_cq(cq, 0))
			die("ibv_req_notify_cq");
	}
	if (wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "rank %d: %s failed: %s\n", rank, wc.wr_id ? "a WRITE" : "a receive", ibv_wc_status_str(wc.status));
		exit(1);
	}
	if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
		unsigned from = ntohl(wc.imm_data) % (MAXRANKS + 1);
		posted[rank == 0 ? from : 0]--;
		arrived[from] = 1;
	} else {
		sends_out--;
	}
}

/* write_to copies count floats from src to rank k's buf (or, to rank 0,
 * its stage at off), with immediate imm (the sender's rank, or
 * MAXRANKS for rank 0's sum). */
static void write_to(int k, const float *src, long count, uint64_t remote, uint32_t imm)
{
	struct ibv_sge sge = {.addr = (uintptr_t)src, .length = count * sizeof(float), .lkey = mr->lkey};
	struct ibv_send_wr wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE_WITH_IMM, .send_flags = IBV_SEND_SIGNALED, .imm_data = htonl(imm)};
	wr.wr.rdma.remote_addr = remote;
	wr.wr.rdma.rkey = peer_rkey[k];
	struct ibv_send_wr *bad;
	while (sends_out >= GRQ)
		poll_one();
	if (ibv_post_send(qp[k], &wr, &bad))
		die("ibv_post_send");
	sends_out++;
}

static void allreduce(long n)
{
	if (rank != 0) {
		/* The whole vector to rank 0; the sum comes back whole. */
		write_to(0, buf, n, peer_stage + (uint64_t)(rank - 1) * maxn * sizeof(float), rank);
		while (!arrived[MAXRANKS])
			poll_one();
		return;
	}
	for (int k = 1; k < nranks; k++) {
		while (!arrived[k])
			poll_one();
		const float *in = stage + (long)(k - 1) * maxn;
		for (long i = 0; i < n; i++)
			buf[i] += in[i];
	}
	for (int k = 1; k < nranks; k++)
		write_to(k, buf, n, peer_buf[k], MAXRANKS);
}

int main(void)
{
	lab_init();
	setup();
	for (int j = 0; j < nsizes * reps; j++) {
		long n = sizes[j / reps];
		lab_load(j / reps, buf);
		post_recvs();
		lab_start(j);
		allreduce(n);
		while (sends_out > 0)
			poll_one();
		lab_touch("done", j);
		lab_store(j, buf, n);
	}
	if (rank == 0)
		printf("rank 0: %d all-reduces of up to %ld floats on %d ranks done (gathered at rank 0)\n", nsizes * reps, maxn, nranks);
	return 0;
}
