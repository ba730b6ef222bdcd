/* The lab's peer for "a lock with COMPARE_AND_SWAP": on rxe1 it holds a
 * lock word and a counter, each 8 bytes in a memory region of its own: the
 * lock's MR grants remote atomics only (a WRITE to it fails), the
 * counter's remote READ and WRITE only. It publishes, in
 * $LAB_PEER_DIR/target, its QP number, PSN, GID (index 1) and the address
 * and rkey of each ("QPN PSN GID LOCK_ADDR LOCK_RKEY COUNTER_ADDR
 * COUNTER_RKEY"), and connects its RC QP once the learner's side has
 * written $LAB_PEER_DIR/initiator ("QPN PSN GID").
 *
 * Then it contends for the lock itself, as another client would: it takes
 * the lock (0 -> 1) with a COMPARE_AND_SWAP of its own, through rxe1 (a
 * second QP pair of its own, looped back on rxe1: rxe's atomics are
 * atomic only against other atomics through the device, not against the
 * CPU's own stores), adds one to the counter, keeps the lock for a while
 * and checks that nobody changed the counter meanwhile, releases it with
 * a COMPARE_AND_SWAP 1 -> 0, waits and starts again. When its standard
 * input closes it reports its own increments, the counter, how often its
 * CAS found the lock held by the learner (2) and every change to the
 * counter made while it held the lock: evidence the learner's program
 * cannot print. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <poll.h>
#include <infiniband/verbs.h>

#define PEER_ID 1
#define LEARNER_ID 2

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

/* connect_qp moves qp to RTR towards (rqpn, rpsn, dgid) and on to RTS. */
static int connect_qp(struct ibv_qp *qp, unsigned rqpn, unsigned rpsn, union ibv_gid dgid, unsigned psn)
{
	struct ibv_qp_attr r = {.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = rqpn, .rq_psn = rpsn, .max_dest_rd_atomic = 4, .min_rnr_timer = 12,
		.ah_attr = {.is_global = 1, .port_num = 1,
			    .grh = {.dgid = dgid, .sgid_index = 1, .hop_limit = 64}}};
	struct ibv_qp_attr s = {.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 3,
		.rnr_retry = 3, .sq_psn = psn, .max_rd_atomic = 1};
	return ibv_modify_qp(qp, &r, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) ||
	       ibv_modify_qp(qp, &s, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static int init(struct ibv_qp *qp, int access)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = access};
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

static struct ibv_qp *mq;    /* the peer's own requester QP, looped back on rxe1 */
static struct ibv_cq *mcq;   /* its CQ */
static struct ibv_mr *resmr; /* where its CAS results land */
static uint64_t *res;
static uint64_t lock_addr;
static uint32_t lock_rkey;
static char failure[160];

/* cas does one COMPARE_AND_SWAP on the lock word through rxe1 and waits
 * for it (2 s at most): 0 with the old value in *old, -1 on a failure. */
static int cas(uint64_t compare, uint64_t swap, uint64_t *old)
{
	struct ibv_sge sge = {.addr = (uintptr_t)res, .length = 8, .lkey = resmr->lkey};
	struct ibv_send_wr wr = {.wr_id = 7, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_ATOMIC_CMP_AND_SWP, .send_flags = IBV_SEND_SIGNALED}, *bad;
	wr.wr.atomic.remote_addr = lock_addr;
	wr.wr.atomic.rkey = lock_rkey;
	wr.wr.atomic.compare_add = compare;
	wr.wr.atomic.swap = swap;
	if (ibv_post_send(mq, &wr, &bad)) {
		snprintf(failure, sizeof failure, "the peer's own CAS could not be posted");
		return -1;
	}
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	struct ibv_wc wc;
	for (;;) {
		int n = ibv_poll_cq(mcq, 1, &wc);
		if (n == 1)
			break;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (n < 0 || t.tv_sec - t0.tv_sec >= 2) {
			snprintf(failure, sizeof failure, "the peer's own CAS got no completion");
			return -1;
		}
	}
	if (wc.status != IBV_WC_SUCCESS) {
		snprintf(failure, sizeof failure, "the peer's own CAS failed: %s", ibv_wc_status_str(wc.status));
		return -1;
	}
	*old = *(volatile uint64_t *)res;
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
	/* Three pages: the lock word, the counter, the CAS results. */
	char *mem = NULL;
	if (posix_memalign((void **)&mem, 4096, 3 * 4096)) {
		perror("peer: memory");
		return 1;
	}
	memset(mem, 0, 3 * 4096);
	volatile uint64_t *lockw = (uint64_t *)mem, *counter = (uint64_t *)(mem + 4096);
	res = (uint64_t *)(mem + 8192);
	struct ibv_mr *lmr = ibv_reg_mr(pd, mem, 8, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
	struct ibv_mr *cmr = ibv_reg_mr(pd, mem + 4096, 8,
					IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	resmr = ibv_reg_mr(pd, res, 8, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	mcq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_qp *qp = cq ? ibv_create_qp(pd, &ia) : NULL; /* the learner's */
	struct ibv_qp *mt = cq ? ibv_create_qp(pd, &ia) : NULL; /* answers the peer's own CAS */
	ia.send_cq = ia.recv_cq = mcq;
	mq = mcq ? ibv_create_qp(pd, &ia) : NULL;
	int remote = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
	union ibv_gid gid;
	if (!lmr || !cmr || !resmr || !qp || !mt || !mq || init(qp, remote) || init(mt, remote) ||
	    init(mq, 0) || ibv_query_gid(ctx, 1, 1, &gid) ||
	    connect_qp(mq, mt->qp_num, 300, gid, 200) || connect_qp(mt, mq->qp_num, 200, gid, 300)) {
		perror("peer: setup");
		return 1;
	}
	lock_addr = (uintptr_t)lockw;
	lock_rkey = lmr->rkey;
	char text[256], g[33];
	for (int i = 0; i < 16; i++)
		sprintf(g + 2 * i, "%02x", gid.raw[i]);
	unsigned psn = 6161;
	snprintf(text, sizeof text, "%u %u %s %llu %u %llu %u\n", qp->qp_num, psn, g,
		 (unsigned long long)lock_addr, lmr->rkey, (unsigned long long)(uintptr_t)counter, cmr->rkey);
	publish("target", text);
	publish("ready", "1\n");

	int connected = 0, contend = 1;
	unsigned long mine = 0, held_by_you = 0, held_other = 0, changed = 0, bad_release = 0;
	uint64_t other = 0, from = 0, to = 0, bad_value = 0;
	char path[256];
	snprintf(path, sizeof path, "%s/initiator", dir());
	for (;;) {
		struct pollfd p = {.fd = 0, .events = POLLIN};
		if (poll(&p, 1, connected == 1 ? 0 : 5) > 0) {
			char c;
			if (read(0, &c, 1) <= 0)
				break; /* the lab asks for the report */
		}
		if (connected == 1 && contend) {
			uint64_t old;
			if (cas(0, PEER_ID, &old)) {
				contend = 0; /* reported below */
			} else if (old == 0) {
				/* Ours: one increment, held 2 ms, during which
				 * nobody else may touch the counter. */
				uint64_t c0 = *counter;
				usleep(1000);
				*counter = c0 + 1;
				usleep(1000);
				uint64_t c1 = *counter;
				if (c1 != c0 + 1) {
					if (!changed)
						from = c0 + 1, to = c1;
					changed++;
				}
				mine++;
				if (cas(PEER_ID, 0, &old))
					contend = 0;
				else if (old != PEER_ID) {
					bad_release++;
					bad_value = old;
				}
				usleep(2000);
			} else if (old == LEARNER_ID) {
				held_by_you++;
				usleep(200); /* a short pause: the holder needs the CPU too */
			} else {
				held_other++;
				other = old;
				usleep(200);
			}
			continue;
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
		if (connect_qp(qp, rqpn, rpsn, dgid, psn)) {
			printf("RTR failed\n");
			connected = -1;
			continue;
		}
		connected = 1;
		publish("connected", "1\n");
	}
	printf("peer on rxe1: QP %u; lock word at 0x%llx (rkey 0x%x, atomics only), counter at 0x%llx (rkey 0x%x, READ and WRITE)\n",
	       qp->qp_num, (unsigned long long)lock_addr, lmr->rkey, (unsigned long long)(uintptr_t)counter, cmr->rkey);
	printf("connected: %s\n", connected == 1 ? "yes" : "no");
	if (failure[0])
		printf("peer failure: %s\n", failure);
	printf("peer increments: %lu\n", mine);
	printf("counter: %llu\n", (unsigned long long)*counter);
	printf("your increments: %lld\n", (long long)(*counter - mine));
	printf("lock found held by you: %lu\n", held_by_you);
	if (held_other)
		printf("lock found holding another value: %lu (the last: %llu)\n", held_other, (unsigned long long)other);
	printf("counter changed while the peer held the lock: %lu", changed);
	if (changed)
		printf(" (first: %llu became %llu)", (unsigned long long)from, (unsigned long long)to);
	printf("\n");
	if (bad_release)
		printf("peer's releases that found the lock word not its own 1: %lu (the last: %llu)\n", bad_release, (unsigned long long)bad_value);
	printf("lock at the end: %llu\n", (unsigned long long)*lockw);
	return 0;
}
