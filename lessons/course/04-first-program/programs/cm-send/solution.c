/* Exercise 4: connect with rdma_cm to the lab's peer, SEND, RECV the reply. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <netdb.h>
#include <rdma/rdma_cma.h>

/* wait_event waits for the next CM event and checks it is the one wanted. */
static int wait_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;
	if (rdma_get_cm_event(ch, &ev)) {
		perror("rdma_get_cm_event");
		return -1;
	}
	enum rdma_cm_event_type got = ev->event;
	int status = ev->status;
	rdma_ack_cm_event(ev);
	if (got != want) {
		fprintf(stderr, "got CM event %s (status %d), wanted %s\n",
			rdma_event_str(got), status, rdma_event_str(want));
		return -1;
	}
	printf("CM event: %s\n", rdma_event_str(got));
	return 0;
}

/* poll_one waits for one completion and checks its status. */
static int poll_one(struct ibv_cq *cq, const char *what)
{
	struct ibv_wc wc;
	int n;
	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0)
		;
	if (n < 0 || wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "%s failed: %s\n", what, n < 0 ? "poll error" : ibv_wc_status_str(wc.status));
		return -1;
	}
	return 0;
}

int main(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;
	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP)) {
		perror("rdma_create_id");
		return 1;
	}
	struct addrinfo *src, *dst;
	if (getaddrinfo("10.0.0.1", NULL, NULL, &src) || getaddrinfo("10.0.0.2", "7471", NULL, &dst)) {
		fprintf(stderr, "getaddrinfo failed\n");
		return 1;
	}
	char msg[] = "hello, peer";
	char reply[160] = {0};
	/* rxe0's address to the peer's: the CM finds the device and the GID. */
	if (rdma_resolve_addr(id, src->ai_addr, dst->ai_addr, 2000) ||
	    wait_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED))
		return 1;
	if (rdma_resolve_route(id, 2000) || wait_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED))
		return 1;
	printf("device: %s\n", ibv_get_device_name(id->verbs->device));

	struct ibv_pd *pd = ibv_alloc_pd(id->verbs);
	struct ibv_cq *cq = ibv_create_cq(id->verbs, 4, NULL, NULL, 0);
	struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1}};
	if (!pd || !cq || rdma_create_qp(id, pd, &ia)) {
		perror("rdma_create_qp");
		return 1;
	}
	struct ibv_mr *smr = ibv_reg_mr(pd, msg, sizeof msg, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *rmr = ibv_reg_mr(pd, reply, sizeof reply - 1, IBV_ACCESS_LOCAL_WRITE);
	if (!smr || !rmr) {
		perror("ibv_reg_mr");
		return 1;
	}
	/* The reply's RECV goes first: a SEND that finds none waits (RNR). */
	struct ibv_sge rsge = {.addr = (uintptr_t)reply, .length = sizeof reply - 1, .lkey = rmr->lkey};
	struct ibv_recv_wr rwr = {.wr_id = 1, .sg_list = &rsge, .num_sge = 1}, *rbad;
	if (ibv_post_recv(id->qp, &rwr, &rbad)) {
		perror("ibv_post_recv");
		return 1;
	}
	struct rdma_conn_param cp = {.responder_resources = 1, .initiator_depth = 1, .retry_count = 7, .rnr_retry_count = 7};
	if (rdma_connect(id, &cp) || wait_event(ch, RDMA_CM_EVENT_ESTABLISHED))
		return 1;

	struct ibv_sge ssge = {.addr = (uintptr_t)msg, .length = sizeof msg, .lkey = smr->lkey};
	struct ibv_send_wr swr = {.wr_id = 2, .sg_list = &ssge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED}, *sbad;
	if (ibv_post_send(id->qp, &swr, &sbad)) {
		perror("ibv_post_send");
		return 1;
	}
	if (poll_one(cq, "SEND") || poll_one(cq, "RECV"))
		return 1;
	printf("reply: %s\n", reply);

	rdma_disconnect(id);
	return 0;
}
