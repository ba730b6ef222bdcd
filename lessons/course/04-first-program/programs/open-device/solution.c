/* Exercise 1: open rxe0, query port 1, print the GID entry the lab uses. */
#include <stdio.h>
#include <string.h>
#include <infiniband/verbs.h>

int main(void)
{
	int ret = 1, n = 0;
	struct ibv_context *ctx = NULL;
	struct ibv_device **list = ibv_get_device_list(&n);
	if (!list) {
		perror("ibv_get_device_list");
		return 1;
	}
	struct ibv_device *dev = NULL;
	for (int i = 0; i < n; i++)
		if (strcmp(ibv_get_device_name(list[i]), "rxe0") == 0)
			dev = list[i];
	if (!dev) {
		fprintf(stderr, "no rxe0 among %d devices\n", n);
		goto out;
	}
	ctx = ibv_open_device(dev);
	if (!ctx) {
		perror("ibv_open_device");
		goto out;
	}
	struct ibv_port_attr port;
	if (ibv_query_port(ctx, 1, &port)) {
		perror("ibv_query_port");
		goto out;
	}
	printf("port 1: state %s, active MTU %d bytes, %d GID entries\n",
	       ibv_port_state_str(port.state), 128 << port.active_mtu, port.gid_tbl_len);

	union ibv_gid gid;
	if (ibv_query_gid(ctx, 1, 1, &gid)) {
		perror("ibv_query_gid");
		goto out;
	}
	printf("GID[1]: ");
	for (int i = 0; i < 16; i += 2)
		printf("%02x%02x%s", gid.raw[i], gid.raw[i + 1], i < 14 ? ":" : "\n");
	ret = 0;
out:
	if (ctx)
		ibv_close_device(ctx);
	ibv_free_device_list(list);
	return ret;
}
