/* Exercise 4: connect with rdma_cm to the lab's peer, SEND, RECV the reply.
 *
 * The peer listens on 10.0.0.2 port 7471 (rxe1); you are 10.0.0.1 (rxe0).
 * 1. rdma_resolve_addr(id, src, dst, 2000), wait for ADDR_RESOLVED;
 *    rdma_resolve_route(id, 2000), wait for ROUTE_RESOLVED.
 * 2. A PD and a CQ on id->verbs, then rdma_create_qp(id, pd, &init_attr).
 * 3. Register msg and reply (keep them in smr and rmr); post a RECV for
 *    the reply first, with wr_id WR_RECV.
 * 4. rdma_connect (set connected = 1 once ESTABLISHED came); post a
 *    signaled SEND of msg (with its terminating zero), wr_id WR_SEND;
 *    poll_both for the two completions; print "reply: " and the reply.
 * The end of main disconnects and tears everything down, in rdma_cm's
 * order.
 */
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
	/* TODO: steps 1 to 4 (keep pd, cq, smr and rmr in the variables above,
	 * for the teardown below). */
	(void)msg;
	(void)reply;
	(void)poll_both;
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
