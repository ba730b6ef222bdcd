/* The lab's peer for "connect with rdma_cm": an rdma_cm server on rxe1's
 * address (argv[1], port argv[2]). It accepts one connection, posts one
 * RECV, and answers the SEND that fills it with a SEND of its own
 * ("pong: " + what arrived). When its standard input closes it reports
 * what happened. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <poll.h>
#include <netdb.h>
#include <rdma/rdma_cma.h>

static void publish(const char *name)
{
	const char *d = getenv("LAB_PEER_DIR");
	char path[256];
	snprintf(path, sizeof path, "%s/%s", d ? d : "/run/lab-peer", name);
	FILE *f = fopen(path, "w");
	if (f) {
		fputs("1\n", f);
		fclose(f);
	}
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: cm-echo ADDR PORT\n");
		return 2;
	}
	struct rdma_event_channel *ch = NULL;
	for (int i = 0; i < 100 && !(ch = rdma_create_event_channel()); i++)
		usleep(50000); /* rdma_ucm is loaded after the guest is ready */
	struct rdma_cm_id *listener;
	struct addrinfo *ai;
	if (!ch || rdma_create_id(ch, &listener, NULL, RDMA_PS_TCP) ||
	    getaddrinfo(argv[1], argv[2], NULL, &ai) ||
	    rdma_bind_addr(listener, ai->ai_addr) || rdma_listen(listener, 1)) {
		perror("peer: listen");
		return 1;
	}
	fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
	publish("ready");

	struct rdma_cm_id *id = NULL;
	struct ibv_pd *pd = NULL;
	struct ibv_cq *cq = NULL;
	struct ibv_mr *rmr = NULL, *smr = NULL;
	char rbuf[128] = {0}, sbuf[160] = {0};
	int established = 0, received = 0, replied = 0, disconnected = 0;
	for (;;) {
		struct pollfd p[2] = {{.fd = 0, .events = POLLIN}, {.fd = ch->fd, .events = POLLIN}};
		poll(p, 2, 5);
		if (p[0].revents) {
			char c;
			if (read(0, &c, 1) <= 0)
				break;
		}
		struct rdma_cm_event *ev;
		while (rdma_get_cm_event(ch, &ev) == 0) {
			if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST && !id) {
				id = ev->id;
				pd = ibv_alloc_pd(id->verbs);
				cq = ibv_create_cq(id->verbs, 4, NULL, NULL, 0);
				struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
					.cap = {.max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1}};
				rmr = ibv_reg_mr(pd, rbuf, sizeof rbuf - 1, IBV_ACCESS_LOCAL_WRITE);
				smr = ibv_reg_mr(pd, sbuf, sizeof sbuf, IBV_ACCESS_LOCAL_WRITE);
				if (rdma_create_qp(id, pd, &ia)) {
					perror("peer: rdma_create_qp");
					return 1;
				}
				struct ibv_sge sge = {.addr = (uintptr_t)rbuf, .length = sizeof rbuf - 1, .lkey = rmr->lkey};
				struct ibv_recv_wr wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1}, *bad;
				ibv_post_recv(id->qp, &wr, &bad);
				/* rnr_retry_count travels in the reply (REP) and sets
				 * the learner's QP's RNR retries: finite, so a SEND that
				 * finds no RECV here ends in an error, not forever. */
				struct rdma_conn_param cp = {.responder_resources = 1, .initiator_depth = 1, .rnr_retry_count = 3};
				rdma_accept(id, &cp);
			} else if (ev->event == RDMA_CM_EVENT_ESTABLISHED) {
				established = 1;
			} else if (ev->event == RDMA_CM_EVENT_DISCONNECTED) {
				disconnected = 1;
				rdma_disconnect(ev->id); /* answers the learner's DREQ */
			}
			rdma_ack_cm_event(ev);
		}
		struct ibv_wc wc;
		while (cq && ibv_poll_cq(cq, 1, &wc) > 0) {
			if (wc.status != IBV_WC_SUCCESS) {
				printf("completion error: %s\n", ibv_wc_status_str(wc.status));
				continue;
			}
			if (wc.opcode == IBV_WC_RECV && !received) {
				received = wc.byte_len;
				snprintf(sbuf, sizeof sbuf, "pong: %s", rbuf);
				struct ibv_sge sge = {.addr = (uintptr_t)sbuf, .length = strlen(sbuf) + 1, .lkey = smr->lkey};
				struct ibv_send_wr wr = {.wr_id = 2, .sg_list = &sge, .num_sge = 1,
					.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED}, *bad;
				ibv_post_send(id->qp, &wr, &bad);
			} else if (wc.opcode == IBV_WC_SEND) {
				replied = 1;
			}
		}
	}
	printf("peer on rxe1: rdma_cm server on %s port %s\n", argv[1], argv[2]);
	printf("connection: %s\n", established ? "established" : "none");
	printf("received: ");
	for (int i = 0; i < 64 && rbuf[i]; i++)
		putchar(rbuf[i] >= 32 && rbuf[i] < 127 ? rbuf[i] : '.');
	printf("\nreceived bytes: %d\n", received);
	printf("replied: %s\n", replied ? sbuf : "nothing");
	printf("disconnected: %s\n", disconnected ? "yes" : "no");
	return 0;
}
