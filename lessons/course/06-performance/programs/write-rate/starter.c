#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

/* Lesson 06, the tuning challenge: as many 64-byte RDMA WRITEs per second
 * as you can, into the peer's 64-byte buffer on rxe1, for SECONDS seconds.
 * The lab runs ib_write_bw -s 64 on the same devices beside this program;
 * the peer counts the WRITE packets that reached its QP and ib_write_bw's
 * (its view, not what this program prints), and the check compares them.
 * The target: 1.30 of your WRITEs for every one of ib_write_bw's.
 *
 * 第 06 课的调优挑战：在 SECONDS 秒内，以尽可能高的速率向 rxe1 上对端的
 * 64 字节缓冲区发送 64 字节的 RDMA WRITE。实验室在同样的设备上、在本程序
 * 旁边同时运行 ib_write_bw -s 64；对端统计到达它的 QP 的 WRITE 包数和
 * ib_write_bw 的包数（对端看到的，而不是本程序打印的），检查程序再做比较。
 * 目标：ib_write_bw 每发一个，你至少发 1.30 个。 */

#define SECONDS 5

/* The message: 63 characters and the terminating zero, 64 bytes.
 * 消息：63 个字符加结尾的零，共 64 字节。 */
static char msg[64] = "lesson 06: sixty-four bytes per RDMA WRITE, as fast as it goes!";

/* elapsed is the time since start, in seconds. 自 start 起经过的秒数。 */
static double elapsed(const struct timespec *start)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - start->tv_sec) + (now.tv_nsec - start->tv_nsec) / 1e9;
}

/* What the lab's peer on rxe1 published in /run/lab-peer/target.
 * 实验室在 rxe1 上的对端发布在 /run/lab-peer/target 里的内容。 */
struct peer {
	unsigned qpn, psn;
	union ibv_gid gid;
	uint64_t addr;
	uint32_t rkey;
};

/* connect_to_peer reads the peer's target file, tells the peer our QP
 * (QPN, PSN, GID index 1) and moves our QP INIT -> RTR -> RTS: the
 * hand-made connection of lesson 03, done for you here. Every step that
 * fails says which, and a peer that never connects is an error, not
 * something to carry on without.
 * connect_to_peer 读取对端的 target 文件，把我们的 QP（QPN、PSN、GID
 * 索引 1）告诉对端，并把 QP 依次转到 INIT、RTR、RTS：这是第 03 课手工建立
 * 的连接，这里已经替你写好。失败的每一步都会说明是哪一步；对端始终不连接
 * 是错误，不能装作没事继续。 */
static int connect_to_peer(struct ibv_context *ctx, struct ibv_qp *qp, struct peer *p)
{
	char g[40];
	unsigned long long addr;
	FILE *f = fopen("/run/lab-peer/target", "r");
	if (!f) {
		perror("peer: /run/lab-peer/target");
		return -1;
	}
	int n = fscanf(f, "%u %u %32s %llu %u", &p->qpn, &p->psn, g, &addr, &p->rkey);
	fclose(f);
	if (n != 5 || strlen(g) != 32) {
		fprintf(stderr, "peer: /run/lab-peer/target is not \"QPN PSN GID ADDR RKEY\"\n");
		return -1;
	}
	p->addr = addr;
	for (int i = 0; i < 16; i++) {
		unsigned v;
		sscanf(g + 2 * i, "%2x", &v);
		p->gid.raw[i] = v;
	}
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1};
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
		perror("ibv_modify_qp to INIT");
		return -1;
	}
	union ibv_gid mine;
	if (ibv_query_gid(ctx, 1, 1, &mine)) { /* index 1: rxe's IPv4 (RoCEv2) entry 索引 1：rxe 的 IPv4（RoCEv2）条目 */
		perror("ibv_query_gid");
		return -1;
	}
	/* Written whole, then renamed: the peer never reads half a line.
	 * 先完整写好再改名：对端永远不会读到半行。 */
	f = fopen("/run/lab-peer/.initiator", "w");
	if (!f) {
		perror("/run/lab-peer/.initiator");
		return -1;
	}
	fprintf(f, "%u %u ", qp->qp_num, 1000);
	for (int i = 0; i < 16; i++)
		fprintf(f, "%02x", mine.raw[i]);
	fprintf(f, "\n");
	if (fclose(f) || rename("/run/lab-peer/.initiator", "/run/lab-peer/initiator")) {
		perror("/run/lab-peer/initiator");
		return -1;
	}
	/* RoCEv2 packets are UDP/IP and may cross routers: the hop limit is
	 * the IP TTL, so 64 (a usual TTL), not 1, which a router would drop.
	 * RoCEv2 报文是 UDP/IP，可能经过路由器：跳数限制就是 IP 的 TTL，所以取 64
	 * （常用的 TTL），而不是会被路由器丢弃的 1。 */
	struct ibv_qp_attr r = {.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = p->qpn, .rq_psn = p->psn, .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
		.ah_attr = {.is_global = 1, .port_num = 1,
			    .grh = {.dgid = p->gid, .sgid_index = 1, .hop_limit = 64}}};
	if (ibv_modify_qp(qp, &r, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
		perror("ibv_modify_qp to RTR");
		return -1;
	}
	/* Finite retries: with timeout 14 (67 ms) and retry_cnt 3 an
	 * unanswered WRITE fails with IBV_WC_RETRY_EXC_ERR after about a
	 * quarter of a second. 7 would mean "retry forever" to rnr_retry,
	 * and to retry_cnt as well on rxe (lesson 02): a missing peer would
	 * then show nothing at all.
	 * 有限的重试：timeout 14（67 毫秒）加 retry_cnt 3，得不到应答的 WRITE
	 * 大约四分之一秒后以 IBV_WC_RETRY_EXC_ERR 失败。7 对 rnr_retry 意味着
	 * “永远重试”，在 rxe 上对 retry_cnt 也是如此（第 02 课）：对端消失时
	 * 就什么也看不到了。 */
	struct ibv_qp_attr s = {.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 3,
		.rnr_retry = 3, .sq_psn = 1000, .max_rd_atomic = 1};
	if (ibv_modify_qp(qp, &s, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)) {
		perror("ibv_modify_qp to RTS");
		return -1;
	}
	for (int i = 0; access("/run/lab-peer/connected", F_OK); i++) {
		if (i == 500) { /* 5 s 5 秒 */
			fprintf(stderr, "peer: no /run/lab-peer/connected after 5 s: the peer did not connect its QP to ours\n");
			return -1;
		}
		usleep(10000);
	}
	return 0;
}


/* poll_one waits at most secs seconds for one completion on cq: 1 when
 * it came (its status still to be read), 0 on the deadline, -1 when
 * polling failed.
 * poll_one 最多等待 secs 秒，从 cq 取一个完成：取到返回 1（状态仍需检查），
 * 超时返回 0，轮询出错返回 -1。 */
static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc, int secs)
{
	struct timespec start;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		int n = ibv_poll_cq(cq, 1, wc);
		if (n != 0)
			return n < 0 ? -1 : 1;
		if (elapsed(&start) >= secs)
			return 0;
	}
}

int main(void)
{
	int ret = 1;
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device *dev = NULL;
	for (int i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), "rxe0"))
			dev = list[i];
	struct ibv_context *ctx = dev ? ibv_open_device(dev) : NULL;
	struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	/* One WR in flight at a time: a send queue of 1 and a CQ of 1 suffice.
	 * 每次只有一个 WR 在途：发送队列和 CQ 各 1 个槽位就够了。 */
	struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 1, NULL, NULL, 0) : NULL;
	struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_qp *qp = cq ? ibv_create_qp(pd, &ia) : NULL;
	struct ibv_mr *mr = NULL;
	struct peer peer;
	if (!qp) {
		perror("setup (rxe0, PD, CQ, QP)");
		goto out;
	}
	if (connect_to_peer(ctx, qp, &peer))
		goto out;
	mr = ibv_reg_mr(pd, msg, sizeof msg, IBV_ACCESS_LOCAL_WRITE);
	if (!mr) {
		perror("ibv_reg_mr");
		goto out;
	}

	/* The naive loop: post one signaled WRITE, wait for its completion,
	 * post the next. Correct, and slow: one doorbell (on rxe a write()
	 * system call) and one completion per WRITE, and never more than one
	 * WRITE in flight. Make it fast; the hints in the page say where to
	 * look, one at a time.
	 * 朴素的循环：提交一个带信号的 WRITE，等它完成，再提交下一个。它是对的，
	 * 但很慢：每个 WRITE 一次门铃（在 rxe 上是一次 write() 系统调用）和一个完成，
	 * 而且在途的 WRITE 从不超过一个。让它变快；页面上的提示会逐条告诉你往哪里看。 */
	struct ibv_sge sge = {.addr = (uintptr_t)msg, .length = sizeof msg, .lkey = mr->lkey};
	struct ibv_send_wr wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED};
	wr.wr.rdma.remote_addr = peer.addr;
	wr.wr.rdma.rkey = peer.rkey;
	long writes = 0;
	struct timespec start;
	clock_gettime(CLOCK_MONOTONIC, &start);
	while (elapsed(&start) < SECONDS) {
		struct ibv_send_wr *bad;
		int err = ibv_post_send(qp, &wr, &bad);
		if (err) {
			fprintf(stderr, "ibv_post_send: %s\n", strerror(err));
			goto out;
		}
		struct ibv_wc wc;
		int got = poll_one(cq, &wc, 10);
		if (got <= 0) {
			fprintf(stderr, got < 0 ? "ibv_poll_cq failed\n" : "no completion after 10 s\n");
			goto out;
		}
		if (wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "WRITE %lu failed: %s (status %d, vendor error 0x%x)\n",
				(unsigned long)wc.wr_id, ibv_wc_status_str(wc.status), wc.status, wc.vendor_err);
			goto out;
		}
		writes++;
	}
	double secs = elapsed(&start);
	/* Your own figure, for you: the check measures from the peer's side.
	 * 这是给你看的自己的数字；检查程序从对端那一侧测量。 */
	printf("%ld WRITEs of %zu bytes in %.2f s: %.0f WRITEs/s\n", writes, sizeof msg, secs, writes / secs);
	ret = 0;
out:
	/* Teardown in reverse order of creation. 按创建的相反顺序释放。 */
	if (qp)
		ibv_destroy_qp(qp);
	if (mr)
		ibv_dereg_mr(mr);
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
	if (ctx)
		ibv_close_device(ctx);
	if (list)
		ibv_free_device_list(list);
	return ret;
}
