/* Exercise 2: register a buffer, print its keys, then fail on purpose.
 *
 * 1. Register a 4096-byte buffer with ibv_reg_mr (access: local write and
 *    remote write); print "lkey=0x%x rkey=0x%x".
 * 2. Read RLIMIT_MEMLOCK with getrlimit and register twice that many bytes:
 *    ibv_reg_mr returns NULL. Print errno as "errno=%d (%s)" with strerror,
 *    and exit 0 when it is ENOMEM.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/resource.h>
#include <infiniband/verbs.h>

int main(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	if (!list || !list[0]) {
		fprintf(stderr, "no RDMA device\n");
		return 1;
	}
	struct ibv_context *ctx = ibv_open_device(list[0]);
	struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	if (!pd) {
		perror("ibv_open_device/ibv_alloc_pd");
		return 1;
	}

	/* TODO: step 1 and step 2. */

	return 1;
}
