/* Exercise 4: connect with rdma_cm to the lab's peer, SEND, RECV the reply. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>
#include <poll.h>
#include <netdb.h>
#include <rdma/rdma_cma.h>

/* The work requests' ids: a completion names its request by wr_id. */
enum { WR_RECV = 1, WR_SEND = 2 };

/* wait_event waits (at most 5 s) for the next CM event and checks it is
 * the one wanted: a failure (ADDR_ERROR, REJECTED, UNREACHABLE…) or
 * silence ends the program with the reason. */
static int wait_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
	struct pollfd p = {.fd = ch->fd, .events = POLLIN};
	if (poll(&p, 1, 5000) != 1) {
		fprintf(stderr, "no CM event after 5 s, wanted %s\n", rdma_event_str(want));
		return -1;
	}
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

/* poll_both waits at most secs seconds for the SEND's and the RECV's
 * completions. They share one CQ and may come in either order (the
 * reply's RECV can complete before our SEND's acknowledgement is
 * processed), so each is told apart by its wr_id and opcode, never by
 * its place; the RECV's byte_len says how much of the reply arrived. */
static int poll_both(struct ibv_cq *cq, uint32_t *recv_len, int secs)
{
	int send_done = 0, recv_done = 0;
	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	while (!send_done || !recv_done) {
		struct ibv_wc wc;
		int n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0) {
			fprintf(stderr, "ibv_poll_cq failed\n");
			return -1;
		}
		if (n == 0) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			if (now.tv_sec - start.tv_sec >= secs) {
				fprintf(stderr, "after %d s: %s\n", secs,
					!send_done ? "the SEND has not completed" : "no reply (the RECV has not completed)");
				return -1;
			}
			continue;
		}
		const char *what = wc.wr_id == WR_SEND ? "SEND" : wc.wr_id == WR_RECV ? "RECV" : "?";
		if (wc.status != IBV_WC_SUCCESS) { /* opcode and byte_len are not valid then */
			fprintf(stderr, "%s (wr_id %llu) failed: %s\n", what,
				(unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
			return -1;
		}
		if (wc.wr_id == WR_SEND && wc.opcode == IBV_WC_SEND) {
			send_done = 1;
		} else if (wc.wr_id == WR_RECV && wc.opcode == IBV_WC_RECV) {
			recv_done = 1;
			*recv_len = wc.byte_len;
		} else {
			fprintf(stderr, "unexpected completion: wr_id %llu, opcode %d\n",
				(unsigned long long)wc.wr_id, wc.opcode);
			return -1;
		}
	}
	return 0;
}

int main(void)
{
	int ret = 1, connected = 0;
	struct rdma_event_channel *ch = NULL;
	struct rdma_cm_id *id = NULL;
	struct addrinfo *src = NULL, *dst = NULL;
	struct ibv_pd *pd = NULL;
	struct ibv_cq *cq = NULL;
	struct ibv_mr *smr = NULL, *rmr = NULL;
	char msg[] = "hello, peer";
	char reply[160] = {0};

	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP)) {
		perror("rdma_create_id");
		goto out;
	}
	if (getaddrinfo("10.0.0.1", NULL, NULL, &src) || getaddrinfo("10.0.0.2", "7471", NULL, &dst)) {
		fprintf(stderr, "getaddrinfo failed\n");
		goto out;
	}
	/* rxe0's address to the peer's: the CM finds the device and the GID. */
	if (rdma_resolve_addr(id, src->ai_addr, dst->ai_addr, 2000) ||
	    wait_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED))
		goto out;
	if (rdma_resolve_route(id, 2000) || wait_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED))
		goto out;
	printf("device: %s\n", ibv_get_device_name(id->verbs->device));

	pd = ibv_alloc_pd(id->verbs);
	cq = pd ? ibv_create_cq(id->verbs, 4, NULL, NULL, 0) : NULL;
	struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1}};
	if (!cq || rdma_create_qp(id, pd, &ia)) {
		perror("ibv_alloc_pd/ibv_create_cq/rdma_create_qp");
		goto out;
	}
	smr = ibv_reg_mr(pd, msg, sizeof msg, IBV_ACCESS_LOCAL_WRITE);
	rmr = ibv_reg_mr(pd, reply, sizeof reply - 1, IBV_ACCESS_LOCAL_WRITE);
	if (!smr || !rmr) {
		perror("ibv_reg_mr");
		goto out;
	}
	/* The reply's RECV goes first: a SEND that finds none is answered
	 * with RNR NAKs. */
	struct ibv_sge rsge = {.addr = (uintptr_t)reply, .length = sizeof reply - 1, .lkey = rmr->lkey};
	struct ibv_recv_wr rwr = {.wr_id = WR_RECV, .sg_list = &rsge, .num_sge = 1}, *rbad;
	if (ibv_post_recv(id->qp, &rwr, &rbad)) {
		perror("ibv_post_recv");
		goto out;
	}
	/* Finite retries. retry_count sets both QPs' transport retries;
	 * rnr_retry_count travels in the connect request and sets the PEER's
	 * RNR retries (the peer's rdma_accept sets ours). 7 would mean
	 * forever: a missing RECV would then show no error at all. */
	struct rdma_conn_param cp = {.responder_resources = 1, .initiator_depth = 1,
		.retry_count = 3, .rnr_retry_count = 3};
	if (rdma_connect(id, &cp) || wait_event(ch, RDMA_CM_EVENT_ESTABLISHED))
		goto out;
	connected = 1;

	struct ibv_sge ssge = {.addr = (uintptr_t)msg, .length = sizeof msg, .lkey = smr->lkey};
	struct ibv_send_wr swr = {.wr_id = WR_SEND, .sg_list = &ssge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED}, *sbad;
	if (ibv_post_send(id->qp, &swr, &sbad)) {
		perror("ibv_post_send");
		goto out;
	}
	uint32_t len = 0;
	if (poll_both(cq, &len, 10))
		goto out;
	/* The peer sends a string with its terminating zero: at least one
	 * byte, ending in 0, and never more than the buffer we posted. */
	if (len == 0 || len > sizeof reply - 1 || reply[len - 1] != '\0') {
		fprintf(stderr, "the reply is %u bytes, not a string of at most %zu\n", len, sizeof reply - 1);
		goto out;
	}
	printf("reply: %s\n", reply);
	printf("reply bytes: %u\n", len);
	ret = 0;
out:
	/* rdma_cm's teardown: disconnect and wait for DISCONNECTED, then the
	 * QP, the MRs, the CQ, the PD, the CM id, the event channel and the
	 * addresses — each after whatever still uses it. */
	if (connected) {
		rdma_disconnect(id);
		wait_event(ch, RDMA_CM_EVENT_DISCONNECTED);
	}
	if (id && id->qp)
		rdma_destroy_qp(id);
	if (smr)
		ibv_dereg_mr(smr);
	if (rmr)
		ibv_dereg_mr(rmr);
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
	if (id)
		rdma_destroy_id(id);
	if (ch)
		rdma_destroy_event_channel(ch);
	if (dst)
		freeaddrinfo(dst);
	if (src)
		freeaddrinfo(src);
	return ret;
}
