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


/* The send queue holds DEPTH WRs; they are posted in lists of LIST, one
 * ibv_post_send (one doorbell) per list, and only the last WR of a list
 * asks for a completion. So LISTS lists are in flight at most, and one
 * completion per list says all LIST of its WRs are done (a send queue
 * completes in order).
 * 发送队列容纳 DEPTH 个 WR；每 LIST 个串成一个链表，一个链表只调用一次
 * ibv_post_send（一次门铃），只有链表中最后一个 WR 要求完成。于是最多有
 * LISTS 个链表在途，一个链表的完成说明它的 LIST 个 WR 都已完成（发送队列
 * 按顺序完成）。 */
#define DEPTH 128
#define LIST 16
#define LISTS (DEPTH / LIST)

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
	/* LISTS completions are due at most, but a QP that fails flushes
	 * every WR in flight with an error completion, signaled or not: the
	 * CQ has room for all DEPTH of them (an overflowing CQ is an error of
	 * its own on hardware).
	 * 正常时最多只有 LISTS 个完成；但 QP 出错时，在途的每个 WR 不论是否要求
	 * 完成，都会以错误完成被冲刷出来：CQ 要能容下全部 DEPTH 个（在硬件上，
	 * CQ 溢出本身就是另一个错误）。 */
	struct ibv_cq *cq = pd ? ibv_create_cq(ctx, DEPTH, NULL, NULL, 0) : NULL;
	/* Ask for room to post the message inline: the provider copies it
	 * into the WR at post time, so the device needs no lkey and no DMA read.
	 * 申请内联空间：提供者在提交时就把消息复制进 WR，设备无需 lkey，也无需 DMA 读。 */
	struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = DEPTH, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1,
			.max_inline_data = sizeof msg}};
	struct ibv_qp *qp = cq ? ibv_create_qp(pd, &ia) : NULL;
	struct ibv_mr *mr = NULL;
	struct peer peer;
	int inflight = 0; /* lists posted and not yet completed 已提交未完成的链表数 */
	if (!qp) {
		perror("setup (rxe0, PD, CQ, QP)");
		goto out;
	}
	if (connect_to_peer(ctx, qp, &peer))
		goto out;
	/* Registered all the same: a device that grants less inline room
	 * than asked (read back in ia.cap) gets the plain post.
	 * 仍然注册：设备给的内联空间少于所求时（见回填的 ia.cap），改用普通提交。 */
	mr = ibv_reg_mr(pd, msg, sizeof msg, IBV_ACCESS_LOCAL_WRITE);
	if (!mr) {
		perror("ibv_reg_mr");
		goto out;
	}
	unsigned inl = ia.cap.max_inline_data >= sizeof msg ? IBV_SEND_INLINE : 0;
	struct ibv_sge sge = {.addr = (uintptr_t)msg, .length = sizeof msg, .lkey = mr->lkey};
	struct ibv_send_wr wr[LIST];
	for (int i = 0; i < LIST; i++) {
		wr[i] = (struct ibv_send_wr){.wr_id = i, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE, .send_flags = inl,
			.next = i + 1 < LIST ? &wr[i + 1] : NULL};
		wr[i].wr.rdma.remote_addr = peer.addr;
		wr[i].wr.rdma.rkey = peer.rkey;
	}
	wr[LIST - 1].send_flags |= IBV_SEND_SIGNALED;
	long writes = 0;
	struct timespec start;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (int stop = 0; !stop || inflight > 0;) {
		stop = stop || elapsed(&start) >= SECONDS;
		while (!stop && inflight < LISTS) {
			struct ibv_send_wr *bad;
			int err = ibv_post_send(qp, wr, &bad);
			if (err) {
				fprintf(stderr, "ibv_post_send: %s\n", strerror(err));
				goto out;
			}
			inflight++;
		}
		/* Once time is up, what is in flight must still complete: a
		 * deadline keeps a vanished peer from holding us forever.
		 * 时间到了之后，在途的仍要等它们完成；截止时间保证对端消失时不会永远等下去。 */
		if (stop && elapsed(&start) >= SECONDS + 10) {
			fprintf(stderr, "%d lists still without a completion 10 s after the end\n", inflight);
			goto out;
		}
		struct ibv_wc wc[LISTS];
		int n = ibv_poll_cq(cq, LISTS, wc);
		if (n < 0) {
			fprintf(stderr, "ibv_poll_cq failed\n");
			goto out;
		}
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "WRITE %lu failed: %s (status %d, vendor error 0x%x)\n",
					(unsigned long)wc[i].wr_id, ibv_wc_status_str(wc[i].status), wc[i].status, wc[i].vendor_err);
				goto out;
			}
			inflight--;
			writes += LIST;
		}
	}
	double secs = elapsed(&start);
	printf("%ld WRITEs of %zu bytes in %.2f s: %.0f WRITEs/s (lists of %d, %d in flight, %s)\n",
	       writes, sizeof msg, secs, writes / secs, LIST, DEPTH, inl ? "inline" : "not inline");
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
