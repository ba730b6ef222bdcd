/* The lab's peer for lesson 06's tuning challenge. On rxe1 it registers a
 * 64-byte buffer for remote writes (so no WRITE to it can carry more than
 * 64 bytes: one packet each) and publishes, in $LAB_PEER_DIR/target, its
 * QP number, PSN, GID (index 1), the buffer's address and rkey. First it
 * starts the reference, ib_write_bw -s 64 from rxe0 to rxe1, and leaves
 * it running; it connects its RC QP once the learner's side has written
 * $LAB_PEER_DIR/initiator ("QPN PSN GID") and says so in
 * $LAB_PEER_DIR/connected.
 *
 * Then it counts, every 10 ms: its own QP's next expected PSN
 * (ibv_query_qp, IBV_QP_RQ_PSN; rxe answers with the responder's live
 * PSN, which moves by one for every request packet that reached this QP
 * in order; packets to other QPs do not move it), and rxe1's
 * received-packets counter (both flows). When its standard input closes
 * (the lab does that after the learner's program ended) it stops
 * ib_write_bw and reports the learner's count, ib_write_bw's beside it,
 * the ratio of the two chunk by chunk (its median and the median's 95%
 * confidence interval), and what its buffer holds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <fcntl.h>
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

static long long now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000LL + t.tv_nsec / 1000;
}


/* The sampler reads, about every 10 ms, the learner's count (this QP's
 * PSN) and rxe1's received-packets counter, which counts the learner's
 * packets and ib_write_bw's, running beside it. Only the learner's busy
 * part counts (from the last reading before its PSN first moved to the
 * first after it last moved), cut into chunks of at least CHUNK_US; in
 * each chunk ib_write_bw's packets are the counter's less the learner's,
 * and the chunk's ratio is the learner's over ib_write_bw's. Both shared
 * the guest's CPU in that same chunk, so a moment when the (shared,
 * emulated) machine gave the guest less CPU slows both alike. */
#define MAX_SAMPLES 8000
#define CHUNK_US 100000
#define PSN_WRAP (1L << 24)
struct sampler {
	int n;
	long long t[MAX_SAMPLES];
	long psn[MAX_SAMPLES], dev[MAX_SAMPLES];
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* quantile q of the n sorted values v (linear between neighbours). */
static double quantile(const double *v, int n, double q)
{
	if (n == 0)
		return 0;
	double k = q * (n - 1);
	int i = (int)k;
	return i + 1 < n ? v[i] + (k - i) * (v[i + 1] - v[i]) : v[i];
}

/* median_ci gives the ranks (0-based, in sorted order) that bound the
 * median's 95% confidence interval among n values: the largest k with
 * P(Binomial(n, 1/2) < k) <= 2.5%, so that the median lies between the
 * k-th smallest and the k-th largest value in at least 95% of runs,
 * whatever the chunks' distribution. */
static void median_ci(int n, int *lo, int *hi)
{
	double p = 1, cdf = 0; /* P(X = i) and P(X < i), from i = 0 */
	for (int i = 0; i < n; i++)
		p /= 2;
	int k = 0;
	for (int i = 0; i <= n / 2; i++) {
		cdf += p; /* now P(X <= i) */
		if (cdf > 0.025)
			break;
		k = i + 1;
		p = p * (n - i) / (i + 1);
	}
	*lo = k > 0 ? k - 1 : 0;
	*hi = n - 1 - *lo;
}

/* summarize prints what the sampler saw: packets and window of the
 * learner's busy part, ib_write_bw's packets in it, the chunks, the
 * median rates of both, and the median of the chunks' ratios with its
 * 95% confidence interval. */
static void summarize(struct sampler *s)
{
	int first = -1, last = -1;
	for (int i = 1; i < s->n; i++)
		if (s->psn[i] != s->psn[i - 1]) {
			if (first < 0)
				first = i - 1;
			last = i;
		}
	long pkts = 0, refpkts = 0;
	long long win = 0;
	static double lr[MAX_SAMPLES], rr[MAX_SAMPLES], ratio[MAX_SAMPLES];
	int chunks = 0, alone = 0;
	if (first >= 0) {
		pkts = ((s->psn[last] - s->psn[first]) % PSN_WRAP + PSN_WRAP) % PSN_WRAP;
		win = s->t[last] - s->t[first];
		for (int i = first, j = first + 1; j <= last; j++) {
			if (s->t[j] - s->t[i] < CHUNK_US)
				continue; /* a short tail is left out */
			double dt = (s->t[j] - s->t[i]) / 1e6;
			long dl = ((s->psn[j] - s->psn[i]) % PSN_WRAP + PSN_WRAP) % PSN_WRAP;
			long dr = s->dev[j] - s->dev[i] - dl;
			i = j;
			if (dr <= 0 || s->dev[j] < 0) {
				alone++; /* ib_write_bw was not (yet, or any more) sending */
				continue;
			}
			refpkts += dr;
			lr[chunks] = dl / dt;
			rr[chunks] = dr / dt;
			ratio[chunks] = (double)dl / dr;
			chunks++;
		}
	}
	qsort(lr, chunks, sizeof lr[0], cmp_double);
	qsort(rr, chunks, sizeof rr[0], cmp_double);
	qsort(ratio, chunks, sizeof ratio[0], cmp_double);
	printf("learner: packets %ld window_us %lld chunks %d alone %d\n", pkts, win, chunks, alone);
	printf("rates: learner %.0f reference %.0f reference_packets %ld\n",
	       quantile(lr, chunks, 0.5), quantile(rr, chunks, 0.5), refpkts);
	int lo = 0, hi = 0;
	median_ci(chunks, &lo, &hi);
	printf("ratio: median %.2f low %.2f high %.2f\n", quantile(ratio, chunks, 0.5),
	       chunks ? ratio[lo] : 0, chunks ? ratio[hi] : 0);
	printf("chunk ratios:");
	for (int i = 0; i < chunks && i < 150; i++)
		printf(" %.2f", ratio[i]);
	printf("\n");
}

/* counter reads one of rxe1's hw_counters; -1 if it cannot. */
static long counter(const char *name)
{
	char path[128];
	snprintf(path, sizeof path, "/sys/class/infiniband/rxe1/ports/1/hw_counters/%s", name);
	FILE *f = fopen(path, "r");
	long v = -1;
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/* spawn starts argv with no input or output, in the peer's process
 * group: if the lab stops the peer, they go with it. */
static pid_t spawn(char *const argv[])
{
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open("/dev/null", O_RDWR);
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

/* The reference: ib_write_bw with 64-byte WRITEs and the tool's own
 * defaults for depth, signaling and inline, between rxe0 and rxe1, for
 * longer than any learner's run (it is stopped at the report). */
static pid_t ref_srv = -1, ref_cli = -1;

/* start_reference starts it and waits until its WRITEs flow: 1 when
 * they do, 0 when they did not within 20 s. */
static int start_reference(void)
{
	char p[16];
	snprintf(p, sizeof p, "%d", 18515 + getpid() % 1000);
	char *srv[] = {"/usr/bin/ib_write_bw", "-d", "rxe1", "-x", "1", "-s", "64", "-D", "100", "-F", "-p", p, NULL};
	char *cli[] = {"/usr/bin/ib_write_bw", "-d", "rxe0", "-x", "1", "-s", "64", "-D", "100", "-F", "-p", p, "10.0.0.2", NULL};
	ref_srv = spawn(srv);
	usleep(500000); /* the server needs a moment to listen */
	ref_cli = spawn(cli);
	long c0 = counter("rcvd_pkts");
	for (int i = 0; i < 2000; i++) {
		usleep(10000);
		if (counter("rcvd_pkts") > c0 + 1000)
			return 1;
		if (waitpid(ref_cli, NULL, WNOHANG) == ref_cli) {
			ref_cli = -1;
			return 0;
		}
	}
	return 0;
}

static void stop_reference(void)
{
	if (ref_cli > 0) {
		kill(ref_cli, SIGKILL);
		waitpid(ref_cli, NULL, 0);
	}
	if (ref_srv > 0) {
		kill(ref_srv, SIGKILL);
		waitpid(ref_srv, NULL, 0);
	}
}

static void sample(struct sampler *s, long psn)
{
	if (s->n < MAX_SAMPLES) {
		s->t[s->n] = now_us();
		s->psn[s->n] = psn;
		s->dev[s->n] = counter("rcvd_pkts");
		s->n++;
	}
}

/* rq_psn is the QP's next expected PSN, or -1 if the query failed. */
static long rq_psn(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	if (ibv_query_qp(qp, &a, IBV_QP_RQ_PSN, &ia))
		return -1;
	return a.rq_psn & 0xffffff;
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
	char *buf = calloc(1, 64);
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
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
		 (unsigned long long)(uintptr_t)buf, mr->rkey, 64);
	publish("target", text);
	/* ib_write_bw runs beside the learner's program, on the same CPU. */
	int reference = start_reference();
	printf("reference: %s\n", reference ? "running" : "did not start");
	fflush(stdout);
	publish("ready", "1\n");

	int connected = 0, query_failed = 0;
	static struct sampler learner;
	char path[256];
	snprintf(path, sizeof path, "%s/initiator", dir());
	for (;;) {
		struct pollfd p = {.fd = 0, .events = POLLIN};
		if (poll(&p, 1, 10) > 0) {
			char c;
			if (read(0, &c, 1) <= 0)
				break; /* the lab asks for the report */
		}
		if (connected == 1) {
			long cur = rq_psn(qp);
			if (cur < 0)
				query_failed = 1;
			else
				sample(&learner, cur);
			continue;
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
			.dest_qp_num = rqpn, .rq_psn = rpsn & 0xffffff, .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
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
		sample(&learner, rq_psn(qp));
		connected = 1;
		publish("connected", "1\n");
	}
	/* A last look: packets that came after the last sample count. */
	if (connected == 1 && rq_psn(qp) >= 0)
		sample(&learner, rq_psn(qp));
	stop_reference();
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	const char *state = "unknown";
	if (!ibv_query_qp(qp, &qa, IBV_QP_STATE, &qia))
		state = qa.qp_state == IBV_QPS_RTS ? "RTS" : qa.qp_state == IBV_QPS_ERR ? "ERR" : "other";
	printf("peer on rxe1: QP %u, buffer of 64 bytes, rkey 0x%x\n", qp->qp_num, mr->rkey);
	printf("connected: %s\n", connected == 1 ? "yes" : "no");
	printf("qp state: %s\n", state);
	printf("query failed: %s\n", query_failed ? "yes" : "no");
	summarize(&learner);
	printf("received: ");
	for (int i = 0; i < 64 && buf[i]; i++)
		putchar(buf[i] >= 32 && buf[i] < 127 ? buf[i] : '.');
	printf("\n");
	return 0;
}
