#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <poll.h>
#include <infiniband/verbs.h>

/* Lesson 09: a ring all-reduce over RDMA WRITE_WITH_IMM (the starter).
 *
 * LAB_SIZE copies of this program run at once, rank LAB_RANK of them.
 * Rank r opens rxe(r % 2) and has two RC QPs: one that writes into its
 * right neighbour (r + 1), one its left neighbour (r - 1) writes into.
 * Everything down to "your part" is done for you: the lab's harness
 * (inputs, timing, results) and the ring's wiring. */

#define MAXRANKS 8
#define MAXSIZES 8
#define RQ 64 /* receives kept posted on the left QP */

/* ---------------------------------------------------------------- *
 * The lab's harness: keep as it is. It feeds every rank its own     *
 * vector, times each all-reduce from "go" to the last "done", and   *
 * compares what each rank stored with the sum it computed itself.   *
 * ---------------------------------------------------------------- */
static int rank, nranks, reps, nsizes;
static long sizes[MAXSIZES], maxn;
static char lab_dir[128];

static void lab_name(char *p, size_t n, const char *what, int j)
{
	snprintf(p, n, "%s/%s-%d-%d", lab_dir, what, j, rank);
}

static void lab_init(void)
{
	const char *d = getenv("LAB_PEER_DIR"), *r = getenv("LAB_RANK"), *s = getenv("LAB_SIZE");
	snprintf(lab_dir, sizeof lab_dir, "%s", d ? d : "/run/lab-peer");
	if (!r || !s) {
		fprintf(stderr, "no LAB_RANK or LAB_SIZE: the lab starts the ranks\n");
		exit(1);
	}
	rank = atoi(r), nranks = atoi(s);
	char p[160];
	snprintf(p, sizeof p, "%s/job", lab_dir);
	FILE *f = fopen(p, "r");
	int n = f ? fscanf(f, "%*d %d %d", &reps, &nsizes) : 0;
	for (int k = 0; n == 2 && k < nsizes && k < MAXSIZES; k++) {
		if (fscanf(f, "%ld", &sizes[k]) != 1)
			n = 0;
		if (sizes[k] > maxn)
			maxn = sizes[k];
	}
	if (f)
		fclose(f);
	if (n != 2 || nranks < 2 || nranks > MAXRANKS || rank < 0 || rank >= nranks || nsizes > MAXSIZES) {
		fprintf(stderr, "rank %d: cannot read the harness's %s\n", rank, p);
		exit(1);
	}
}

/* lab_load reads this rank's input of size k into buf. */
static void lab_load(int k, float *buf)
{
	char p[160];
	snprintf(p, sizeof p, "%s/in-%d-%d", lab_dir, k, rank);
	FILE *f = fopen(p, "r");
	if (!f || fread(buf, sizeof *buf, sizes[k], f) != (size_t)sizes[k]) {
		perror(p);
		exit(1);
	}
	fclose(f);
}

static void lab_touch(const char *what, int j)
{
	char p[160];
	lab_name(p, sizeof p, what, j);
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0) {
		perror(p);
		exit(1);
	}
	close(fd);
}

/* lab_start says this rank is ready for step j and waits for "go". */
static void lab_start(int j)
{
	char p[160];
	lab_touch("arrive", j);
	snprintf(p, sizeof p, "%s/go-%d", lab_dir, j);
	for (int i = 0; access(p, F_OK); i++) {
		if (i == 200000) { /* 10 s */
			fprintf(stderr, "rank %d: no go for step %d after 10 s: another rank is missing\n", rank, j);
			exit(1);
		}
		usleep(50);
	}
}

/* lab_store hands this step's result to the harness. */
static void lab_store(int j, const float *buf, long n)
{
	char tmp[160], p[160];
	lab_name(tmp, sizeof tmp, ".out", j);
	lab_name(p, sizeof p, "out", j);
	FILE *f = fopen(tmp, "w");
	if (!f || fwrite(buf, sizeof *buf, n, f) != (size_t)n || fclose(f) || rename(tmp, p)) {
		perror(p);
		exit(1);
	}
}

/* ---------------------------------------------------------------- *
 * The ring's wiring: done for you (lesson 03's connection by hand). *
 * ---------------------------------------------------------------- */
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_comp_channel *chan; /* the CQ's events: a rank sleeps instead of spinning */
static struct ibv_cq *cq;
static struct ibv_qp *qp_right, *qp_left; /* we write right; left writes us */
static struct ibv_mr *mr;
static float *buf;   /* the vector, reduced in place */
static float *stage; /* where the left neighbour's partial sums land */
static long slot;    /* floats per staging slot */
static uint64_t right_buf, right_stage; /* the right neighbour's, remote */
static uint32_t right_rkey;
static int posted_recvs, sends_out;
static unsigned char arrived[64]; /* WRITE_WITH_IMM seen, by imm */

struct card {
	unsigned right_qpn, left_qpn;
	char gid[33];
	unsigned long long buf, stage;
	unsigned rkey;
};

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void publish_card(void)
{
	union ibv_gid g;
	if (ibv_query_gid(ctx, 1, 1, &g)) /* index 1: rxe's IPv4 (RoCEv2) entry */
		die("ibv_query_gid");
	char tmp[160], p[160];
	snprintf(tmp, sizeof tmp, "%s/.card-%d", lab_dir, rank);
	snprintf(p, sizeof p, "%s/card-%d", lab_dir, rank);
	FILE *f = fopen(tmp, "w");
	if (!f)
		die(tmp);
	fprintf(f, "%u %u ", qp_right->qp_num, qp_left->qp_num);
	for (int i = 0; i < 16; i++)
		fprintf(f, "%02x", g.raw[i]);
	fprintf(f, " %llu %llu %u\n", (unsigned long long)(uintptr_t)buf, (unsigned long long)(uintptr_t)stage, mr->rkey);
	if (fclose(f) || rename(tmp, p))
		die(p);
}

static void read_card(int r, struct card *c)
{
	char p[160];
	snprintf(p, sizeof p, "%s/card-%d", lab_dir, r);
	for (int i = 0; access(p, F_OK); i++) {
		if (i == 1000) { /* 10 s */
			fprintf(stderr, "rank %d: no %s after 10 s: rank %d did not start\n", rank, p, r);
			exit(1);
		}
		usleep(10000);
	}
	FILE *f = fopen(p, "r");
	if (!f || fscanf(f, "%u %u %32s %llu %llu %u", &c->right_qpn, &c->left_qpn, c->gid, &c->buf, &c->stage, &c->rkey) != 6)
		die(p);
	fclose(f);
}

/* connect_qp moves qp to RTS, talking to remote QP qpn at gid. */
static void connect_qp(struct ibv_qp *qp, unsigned qpn, const char *hex)
{
	union ibv_gid gid;
	for (int i = 0; i < 16; i++) {
		unsigned v;
		sscanf(hex + 2 * i, "%2x", &v);
		gid.raw[i] = v;
	}
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE};
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("ibv_modify_qp to INIT");
	struct ibv_qp_attr r = {.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = qpn, .rq_psn = 1000, .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
		.ah_attr = {.is_global = 1, .port_num = 1, .grh = {.dgid = gid, .sgid_index = 1, .hop_limit = 64}}};
	if (ibv_modify_qp(qp, &r, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("ibv_modify_qp to RTR");
	/* Finite retries: a rank that died shows as IBV_WC_RETRY_EXC_ERR. */
	struct ibv_qp_attr s = {.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 3,
		.rnr_retry = 3, .sq_psn = 1000, .max_rd_atomic = 1};
	if (ibv_modify_qp(qp, &s, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
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
	cq = chan ? ibv_create_cq(ctx, 4 * RQ, NULL, chan, 0) : NULL;
	if (!cq || ibv_req_notify_cq(cq, 0))
		die("ibv_alloc_pd/ibv_create_comp_channel/ibv_create_cq");
	struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = RQ, .max_recv_wr = RQ, .max_send_sge = 1, .max_recv_sge = 1}};
	qp_right = ibv_create_qp(pd, &ia);
	qp_left = ibv_create_qp(pd, &ia);
	if (!qp_right || !qp_left)
		die("ibv_create_qp");
	/* The vector, then room for a whole vector of the left's partial
	 * sums (NRANKS - 1 slots of a chunk each, or one whole vector). */
	slot = maxn / nranks + 1;
	size_t len = 2 * (maxn + nranks) * sizeof(float);
	buf = calloc(1, len);
	stage = buf + maxn + nranks;
	mr = buf ? ibv_reg_mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) : NULL;
	if (!mr)
		die("ibv_reg_mr");
	publish_card();
	struct card right, left;
	read_card((rank + 1) % nranks, &right);
	read_card((rank + nranks - 1) % nranks, &left);
	connect_qp(qp_right, right.left_qpn, right.gid);
	connect_qp(qp_left, left.right_qpn, left.gid);
	right_buf = right.buf, right_stage = right.stage, right_rkey = right.rkey;
}

/* post_recvs keeps RQ receives posted on the left QP: each
 * WRITE_WITH_IMM from the left consumes one (its data goes where the
 * writer said; the receive only carries the immediate). */
static void post_recvs(void)
{
	memset(arrived, 0, sizeof arrived);
	while (posted_recvs < RQ) {
		struct ibv_recv_wr wr = {.wr_id = 0}, *bad;
		if (ibv_post_recv(qp_left, &wr, &bad))
			die("ibv_post_recv");
		posted_recvs++;
	}
}

/* poll_one takes one completion (wr_id 0: a receive; imm + 1: our
 * WRITE), failing loudly on an error or after 10 s without one. With
 * nothing to take it sleeps until the CQ's next event: four ranks share one or two CPUs here, and a rank that spins
 * takes the CPU from the very rank it waits for. */
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
		if (r < 0)
			die("poll");
		if (r == 0) {
			fprintf(stderr, "rank %d: no completion after 10 s\n", rank);
			exit(1);
		}
		struct ibv_cq *ecq;
		void *ectx;
		if (ibv_get_cq_event(chan, &ecq, &ectx))
			die("ibv_get_cq_event");
		ibv_ack_cq_events(ecq, 1);
		/* Armed again before polling again: a completion that came in
		 * between is found by that poll, not missed. */
		if (ibv_req_notify_cq(cq, 0))
			die("ibv_req_notify_cq");
	}
	if (wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "rank %d: %s failed: %s (status %d)\n", rank,
			wc.wr_id ? "a WRITE" : "a receive", ibv_wc_status_str(wc.status), wc.status);
		exit(1);
	}
	if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
		posted_recvs--;
		arrived[ntohl(wc.imm_data) % sizeof arrived] = 1;
	} else {
		sends_out--;
	}
}

/* write_right copies count floats from local src to the right
 * neighbour's buffer (to_stage 0) or staging area (1), at float offset
 * off there, and tells it with immediate imm. */
static void write_right(const float *src, long count, int to_stage, long off, uint32_t imm)
{
	struct ibv_sge sge = {.addr = (uintptr_t)src, .length = count * sizeof(float), .lkey = mr->lkey};
	struct ibv_send_wr wr = {.wr_id = imm + 1, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE_WITH_IMM, .send_flags = IBV_SEND_SIGNALED, .imm_data = htonl(imm)};
	wr.wr.rdma.remote_addr = (to_stage ? right_stage : right_buf) + off * sizeof(float);
	wr.wr.rdma.rkey = right_rkey;
	struct ibv_send_wr *bad;
	while (sends_out >= RQ)
		poll_one();
	if (ibv_post_send(qp_right, &wr, &bad))
		die("ibv_post_send");
	sends_out++;
}

/* wait_left waits until the left neighbour's WRITE with immediate imm
 * has landed. */
static void wait_left(uint32_t imm)
{
	while (!arrived[imm % sizeof arrived])
		poll_one();
}

/* wait_sends waits until every WRITE we posted has completed. */
static void wait_sends(void)
{
	while (sends_out > 0)
		poll_one();
}

/* ---------------------------------------------------------------- *
 * Your part: all-reduce buf[0..n) (sum) across the nranks ranks.    *
 * ---------------------------------------------------------------- */

/* Chunk c of n elements is [chunk_off(c), chunk_off(c + 1)). */
static long chunk_off(long n, int c)
{
	return (long)((long long)n * c / nranks);
}

static void allreduce(long n)
{
	/* TODO: the ring, in two phases of nranks - 1 steps each.
	 *
	 * Reduce-scatter: at step s, send chunk (rank - s) of buf to the
	 * right's staging slot s (write_right(..., 1, s * slot, s)), wait
	 * for the left's write with immediate s (wait_left(s)), and add
	 * stage[s * slot ...] into chunk (rank - s - 1) of buf. Afterwards
	 * chunk (rank + 1) holds the sum of every rank's chunk.
	 *
	 * All-gather: at step s, send chunk (rank + 1 - s) into the right's
	 * buf at the same offset (write_right(..., 0, chunk_off(n, c), ...))
	 * with an immediate the reduce-scatter did not use (nranks + s), and
	 * wait for the left's.
	 *
	 * Indices wrap: (rank - s + nranks) % nranks. As it stands each rank
	 * keeps its own vector, and the harness names the first element that
	 * is not the sum. */
	(void)n;
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
		wait_sends();
		lab_touch("done", j);
		lab_store(j, buf, n);
	}
	if (rank == 0)
		printf("rank 0: %d all-reduces of up to %ld floats on %d ranks done\n", nsizes * reps, maxn, nranks);
	/* Teardown in reverse order of creation. */
	ibv_destroy_qp(qp_left);
	ibv_destroy_qp(qp_right);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_destroy_comp_channel(chan);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	free(buf);
	return 0;
}
