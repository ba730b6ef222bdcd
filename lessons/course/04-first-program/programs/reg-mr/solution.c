/* Exercise 2: register a buffer, print its keys, then fail on purpose. */
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
	buf = malloc(small);
	if (!buf) {
		perror("malloc");
		goto out;
	}
	mr = ibv_reg_mr(pd, buf, small, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!mr) {
		perror("ibv_reg_mr");
		goto out;
	}
	printf("registered %zu bytes: lkey=0x%x rkey=0x%x\n", small, mr->lkey, mr->rkey);

	struct rlimit rl;
	if (getrlimit(RLIMIT_MEMLOCK, &rl)) {
		perror("getrlimit");
		goto out;
	}
	/* Unlimited (a root shell, a container with a raised limit): there
	 * is no limit to go past, and rlim_cur * 2 would overflow. */
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > SIZE_MAX / 2) {
		printf("RLIMIT_MEMLOCK is unlimited here: no registration can go past it\n");
		goto out;
	}
	size_t big = (size_t)rl.rlim_cur * 2;
	printf("RLIMIT_MEMLOCK is %llu bytes; registering %zu bytes\n", (unsigned long long)rl.rlim_cur, big);
	huge = malloc(big);
	if (!huge) {
		perror("malloc");
		goto out;
	}
	mr2 = ibv_reg_mr(pd, huge, big, IBV_ACCESS_LOCAL_WRITE);
	if (mr2) {
		printf("unexpected: %zu bytes registered\n", big);
		goto out;
	}
	int e = errno;
	printf("ibv_reg_mr failed: errno=%d (%s)\n", e, strerror(e));
	ret = e == ENOMEM ? 0 : 1;
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
