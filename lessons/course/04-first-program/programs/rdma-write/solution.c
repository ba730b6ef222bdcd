#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <unistd.h>
#include <infiniband/verbs.h>

/* Exercise 3: RDMA WRITE a message into the peer's buffer. */

/* What the lab's peer on rxe1 published in /run/lab-peer/target. */
struct peer {
	unsigned qpn, psn;
	union ibv_gid gid;
	uint64_t addr;
	uint32_t rkey;
};

/* connect_to_peer reads the peer's target file, tells the peer our QP
 * (QPN, PSN, GID index 1) and moves our QP INIT -> RTR -> RTS: the
 * hand-made connection of lesson 03, done for you here. */
static int connect_to_peer(struct ibv_context *ctx, struct ibv_qp *qp, struct peer *p)
{
	char g[40];
	unsigned long long addr;
	FILE *f = fopen("/run/lab-peer/target", "r");
	if (!f || fscanf(f, "%u %u %32s %llu %u", &p->qpn, &p->psn, g, &addr, &p->rkey) != 5) {
		fprintf(stderr, "cannot read /run/lab-peer/target\n");
		return -1;
	}
	fclose(f);
	p->addr = addr;
	for (int i = 0; i < 16; i++) {
		unsigned v;
		sscanf(g + 2 * i, "%2x", &v);
		p->gid.raw[i] = v;
	}
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1};
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	union ibv_gid mine;
	ibv_query_gid(ctx, 1, 1, &mine);
	/* Written whole, then renamed: the peer never reads half a line. */
	f = fopen("/run/lab-peer/.initiator", "w");
	if (!f)
		return -1;
	fprintf(f, "%u %u ", qp->qp_num, 1000);
	for (int i = 0; i < 16; i++)
		fprintf(f, "%02x", mine.raw[i]);
	fprintf(f, "\n");
	fclose(f);
	rename("/run/lab-peer/.initiator", "/run/lab-peer/initiator");
	struct ibv_qp_attr r = {.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = p->qpn, .rq_psn = p->psn, .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
		.ah_attr = {.is_global = 1, .port_num = 1,
			    .grh = {.dgid = p->gid, .sgid_index = 1, .hop_limit = 1}}};
	if (ibv_modify_qp(qp, &r, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	struct ibv_qp_attr s = {.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
		.rnr_retry = 7, .sq_psn = 1000, .max_rd_atomic = 1};
	if (ibv_modify_qp(qp, &s, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		return -1;
	for (int i = 0; i < 500 && access("/run/lab-peer/connected", F_OK); i++)
		usleep(10000); /* the peer's QP reaches RTR */
	return 0;
}

int main(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device *dev = NULL;
	for (int i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), "rxe0"))
			dev = list[i];
	struct ibv_context *ctx = dev ? ibv_open_device(dev) : NULL;
	struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 4, NULL, NULL, 0) : NULL;
	struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 4, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_qp *qp = cq ? ibv_create_qp(pd, &ia) : NULL;
	struct peer peer;
	if (!qp || connect_to_peer(ctx, qp, &peer)) {
		perror("setup");
		return 1;
	}
	printf("connected to the peer's QP %u; its buffer: addr 0x%llx, rkey 0x%x\n",
	       peer.qpn, (unsigned long long)peer.addr, peer.rkey);

	char msg[] = "hello, rdma";
	struct ibv_mr *mr = ibv_reg_mr(pd, msg, sizeof msg, IBV_ACCESS_LOCAL_WRITE);
	if (!mr) {
		perror("ibv_reg_mr");
		return 1;
	}
	struct ibv_sge sge = {.addr = (uintptr_t)msg, .length = sizeof msg, .lkey = mr->lkey};
	struct ibv_send_wr wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED};
	wr.wr.rdma.remote_addr = peer.addr;
	wr.wr.rdma.rkey = peer.rkey;
	struct ibv_send_wr *bad;
	int err = ibv_post_send(qp, &wr, &bad);
	if (err) {
		fprintf(stderr, "ibv_post_send: %s\n", strerror(err));
		return 1;
	}
	struct ibv_wc wc;
	int n;
	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0)
		;
	if (n < 0) {
		fprintf(stderr, "ibv_poll_cq failed\n");
		return 1;
	}
	if (wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "WRITE failed: %s (status %d, vendor error 0x%x)\n",
			ibv_wc_status_str(wc.status), wc.status, wc.vendor_err);
		return 1;
	}
	printf("WRITE of %zu bytes completed: %s\n", sizeof msg, ibv_wc_status_str(wc.status));
	return 0;
}
