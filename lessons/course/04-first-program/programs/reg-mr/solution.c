/* Exercise 2: register a buffer, print its keys, then fail on purpose. */
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
	size_t small = 4096;
	char *buf = malloc(small);
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, small, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!mr) {
		perror("ibv_reg_mr");
		return 1;
	}
	printf("registered %zu bytes: lkey=0x%x rkey=0x%x\n", small, mr->lkey, mr->rkey);

	struct rlimit rl;
	getrlimit(RLIMIT_MEMLOCK, &rl);
	size_t big = (size_t)rl.rlim_cur * 2;
	printf("RLIMIT_MEMLOCK is %llu bytes; registering %zu bytes\n", (unsigned long long)rl.rlim_cur, big);
	char *huge = malloc(big);
	struct ibv_mr *mr2 = ibv_reg_mr(pd, huge, big, IBV_ACCESS_LOCAL_WRITE);
	if (mr2) {
		printf("unexpected: %zu bytes registered\n", big);
		return 1;
	}
	int e = errno;
	printf("ibv_reg_mr failed: errno=%d (%s)\n", e, strerror(e));

	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return e == ENOMEM ? 0 : 1;
}
