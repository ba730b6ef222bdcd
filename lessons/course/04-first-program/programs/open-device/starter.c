/* Exercise 1: open rxe0, query port 1, print the GID entry the lab uses.
 *
 * 1. ibv_get_device_list, then find the device named "rxe0".
 * 2. ibv_open_device, ibv_query_port(ctx, 1, &port): print its state
 *    (ibv_port_state_str) and active MTU.
 * 3. ibv_query_gid(ctx, 1, 1, &gid): print the 16 bytes as eight groups
 *    of four hex digits separated by ':' (as /sys shows GIDs).
 */
#include <stdio.h>
#include <string.h>
#include <infiniband/verbs.h>

int main(void)
{
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);
	if (!list) {
		perror("ibv_get_device_list");
		return 1;
	}
	printf("%d RDMA devices\n", n);

	/* TODO: open rxe0, query port 1 and GID index 1, print them. */

	ibv_free_device_list(list);
	return 0;
}
