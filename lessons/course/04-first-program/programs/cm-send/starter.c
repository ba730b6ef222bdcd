/* Exercise 4: connect with rdma_cm to the lab's peer, SEND, RECV the reply.
 *
 * The peer listens on 10.0.0.2 port 7471 (rxe1); you are 10.0.0.1 (rxe0).
 * 1. rdma_resolve_addr(id, src, dst, 2000), wait for ADDR_RESOLVED;
 *    rdma_resolve_route(id, 2000), wait for ROUTE_RESOLVED.
 * 2. A PD and a CQ on id->verbs, then rdma_create_qp(id, pd, &init_attr).
 * 3. Register msg and reply; post a RECV for the reply first.
 * 4. rdma_connect, wait for ESTABLISHED; post a signaled SEND of msg
 *    (with its terminating zero); poll_one for the SEND and for the RECV;
 *    print "reply: " and the reply; rdma_disconnect.
 */
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
	/* TODO: steps 1 to 4. */
	(void)msg;
	(void)reply;
	(void)wait_event;
	(void)poll_one;
	return 1;
}
