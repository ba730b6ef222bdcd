#!/bin/sh
# Exercise 2: keys printed, and a registration past RLIMIT_MEMLOCK that
# failed with ENOMEM (the program's exit status says which errno it saw).
say() { if [ "$LAB_LANG" = zh ]; then echo "$2"; else echo "$1"; fi; }
if ! grep -Eq "lkey=0x[0-9a-f]+ rkey=0x[0-9a-f]+" "$LAB_OUT"; then
	say "No line with lkey=0x… rkey=0x… in the output: register the 4096-byte buffer and print mr->lkey and mr->rkey." "输出里没有 lkey=0x… rkey=0x… 这一行：注册 4096 字节的缓冲区，并打印 mr->lkey 和 mr->rkey。"
	exit 1
fi
n=$(grep -c "ibv_reg_mr" "$LAB_SOURCE")
if [ "$n" -lt 2 ]; then
	say "The program calls ibv_reg_mr once: the second registration, past the limit, is the one that must fail." "程序只调用了一次 ibv_reg_mr：第二次、超过上限的那次注册才是应当失败的。"
	exit 1
fi
if ! grep -q "errno=12" "$LAB_OUT" || [ "$LAB_EXIT" != 0 ]; then
	say "The large registration did not end with errno=12 (ENOMEM) and exit status 0 (yours: $LAB_EXIT)." "大的那次注册没有以 errno=12（ENOMEM）结束并以状态 0 退出（你的退出状态：$LAB_EXIT）。"
	exit 1
fi
say "Registered, then refused with ENOMEM: your program runs without CAP_IPC_LOCK, so the kernel charged the pinned pages to RLIMIT_MEMLOCK." "注册成功，随后被 ENOMEM 拒绝：你的程序没有 CAP_IPC_LOCK，内核把钉住的页计入了 RLIMIT_MEMLOCK。"
