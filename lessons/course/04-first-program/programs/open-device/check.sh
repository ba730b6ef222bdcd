#!/bin/sh
# Exercise 1, judged by what the program cannot print: the verbs calls the
# kernel saw it make (LAB_TRACE, recorded with kprobes while it ran) and
# rxe0's own GID table (read here from sysfs), then its output and exit.
want=$(cat /sys/class/infiniband/rxe0/ports/1/gids/1)
say() { if [ "$LAB_LANG" = zh ]; then echo "$2"; else echo "$1"; fi; }
# What the lab could not record, if anything (a line starting with "#").
untraced=""
if grep -q "^# " "$LAB_TRACE" 2>/dev/null; then
	untraced=$(say "(The lab could not record every call: $(grep '^# ' "$LAB_TRACE" | head -3 | sed 's/^# //' | tr '\n' ';'))" "（实验室这次没能完整记录内核看到的调用。）")
fi
if ! grep -q "^open_device " "$LAB_TRACE"; then
	say "The kernel saw your program open no RDMA device: ibv_open_device was never called (or failed before the kernel). Text in the output does not count. ${untraced}" "内核没有看到你的程序打开任何 RDMA 设备：ibv_open_device 没有被调用（或者没到内核就失败了）。输出里的文字不算数。${untraced}"
	exit 1
fi
if ! grep -q "^query_port " "$LAB_TRACE"; then
	say "Your program opened a device, but the kernel saw no port query: call ibv_query_port(ctx, 1, &port). ${untraced}" "你的程序打开了设备，但内核没有看到端口查询：调用 ibv_query_port(ctx, 1, &port)。${untraced}"
	exit 1
fi
if ! grep -q "^query_gid " "$LAB_TRACE"; then
	say "The kernel saw no GID query from your program: the GID must come from the device, with ibv_query_gid(ctx, 1, 1, &gid) — a GID read from /sys or typed in does not count. ${untraced}" "内核没有看到你的程序查询 GID：GID 必须向设备查询，用 ibv_query_gid(ctx, 1, 1, &gid)——从 /sys 读来的或手写的 GID 都不算数。${untraced}"
	exit 1
fi
if ! grep -qi "$want" "$LAB_OUT"; then
	say "Your program queried the device, but rxe0's GID index 1 is $want and your output does not contain it (print the 16 bytes as 8 groups of 4 hex digits with ':')." "你的程序查询了设备，但 rxe0 的 GID 索引 1 是 $want，你的输出里没有它（把 16 个字节按 8 组、每组 4 个十六进制数字、用「:」分隔打印）。"
	exit 1
fi
if [ "$LAB_EXIT" != 0 ]; then
	say "Your program exited with status $LAB_EXIT; it should exit 0 once it has printed the GID." "你的程序以状态 $LAB_EXIT 退出；打印出 GID 之后应以 0 退出。"
	exit 1
fi
say "The kernel saw your program open the device and query port 1 and GID index 1; GID[1] of rxe0 is $want: an IPv4-mapped address (::ffff:10.0.0.1), the entry RoCEv2 uses." "内核看到你的程序打开了设备、查询了端口 1 和 GID 索引 1；rxe0 的 GID[1] 是 $want：一个 IPv4 映射地址（::ffff:10.0.0.1），RoCEv2 使用的就是这一项。"
