#!/bin/sh
# Exercise 1: the program must have printed the GID that rxe0's table
# holds at index 1 (read here from sysfs, not from the program) and exited 0.
want=$(cat /sys/class/infiniband/rxe0/ports/1/gids/1)
say() { if [ "$LAB_LANG" = zh ]; then echo "$2"; else echo "$1"; fi; }
if [ "$LAB_EXIT" != 0 ]; then
	say "Your program exited with status $LAB_EXIT; it should exit 0 once it has printed the GID." "你的程序以状态 $LAB_EXIT 退出；打印出 GID 之后应以 0 退出。"
	exit 1
fi
if ! grep -q "ibv_query_gid" "$LAB_SOURCE"; then
	say "The program never calls ibv_query_gid: the GID must come from the device." "程序没有调用 ibv_query_gid：GID 必须从设备查询得到。"
	exit 1
fi
if ! grep -qi "$want" "$LAB_OUT"; then
	say "rxe0's GID index 1 is $want, and your output does not contain it (print the 16 bytes as 8 groups of 4 hex digits with ':')." "rxe0 的 GID 索引 1 是 $want，你的输出里没有它（把 16 个字节按 8 组、每组 4 个十六进制数字、用「:」分隔打印）。"
	exit 1
fi
say "GID[1] of rxe0 is $want: an IPv4-mapped address (::ffff:10.0.0.1), the entry RoCEv2 uses." "rxe0 的 GID[1] 是 $want：一个 IPv4 映射地址（::ffff:10.0.0.1），RoCEv2 使用的就是这一项。"
