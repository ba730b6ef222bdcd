/* Exercise 2: register a buffer, print its keys, then fail on purpose.
 *
 * 1. Register a 4096-byte buffer (buf) with ibv_reg_mr (access: local
 *    write and remote write), keep it in mr; print "lkey=0x%x rkey=0x%x".
 * 2. Read RLIMIT_MEMLOCK with getrlimit and register twice that many
 *    bytes (huge, big; an unlimited RLIMIT_MEMLOCK has no "twice": say so
 *    and stop): ibv_reg_mr returns NULL. Print errno as "errno=%d (%s)"
 *    with strerror, and set ret to 0 when it is ENOMEM.
 * The end of main frees what was made, in reverse order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <errno.h>
#include <sys/resource.h>
#include <infiniband/verbs.h>

int main(void)
{
	int ret = 1;
	struct ibv_mr *mr = NULL, *mr2 = NULL;
	char *buf = NULL, *huge = NULL;
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = list && list[0] ? ibv_open_device(list[0]) : NULL;
	struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	if (!pd) {
		perror("ibv_get_device_list/ibv_open_device/ibv_alloc_pd");
		goto out;
	}
	size_t small = 4096;
	/* TODO: step 1 and step 2. */
	(void)small;
out:
	/* Reverse order: the MRs (unpinning their pages), then the memory
	 * under them, the PD, the device. */
	if (mr2)
		ibv_dereg_mr(mr2);
	if (mr)
		ibv_dereg_mr(mr);
	free(huge);
	free(buf);
	if (pd)
		ibv_dealloc_pd(pd);
	if (ctx)
		ibv_close_device(ctx);
	if (list)
		ibv_free_device_list(list);
	return ret;
}
