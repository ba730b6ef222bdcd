#!/bin/sh
# Exercise 2, judged by what the program cannot print: the registrations
# the kernel saw it make and what the kernel answered (LAB_TRACE: reg_mr
# with ret=0 for a success, ret=-12 for ENOMEM), then its output and exit.
say() { if [ "$LAB_LANG" = zh ]; then echo "$2"; else echo "$1"; fi; }
# What the lab could not record, if anything (a line starting with "#").
untraced=""
if grep -q "^# " "$LAB_TRACE" 2>/dev/null; then
	untraced=$(say "(The lab could not record every call: $(grep '^# ' "$LAB_TRACE" | head -3 | sed 's/^# //' | tr '\n' ';'))" "（实验室这次没能完整记录内核看到的调用。）")
fi
n=$(grep -c "^reg_mr " "$LAB_TRACE")
if [ "$n" -lt 1 ]; then
	say "The kernel saw no memory registration from your program: ibv_reg_mr was never called. Text in the output (keys, errno=12) does not count. ${untraced}" "内核没有看到你的程序注册任何内存：ibv_reg_mr 没有被调用。输出里的文字（钥匙、errno=12）不算数。${untraced}"
	exit 1
fi
if ! grep -q "^reg_mr .* ret=0$" "$LAB_TRACE"; then
	say "The kernel refused every registration of your program ($n tried): the 4096-byte one must succeed (local and remote write access)." "你的程序的每次注册都被内核拒绝了（共 $n 次）：4096 字节那次应当成功（本地写和远程写权限）。"
	exit 1
fi
if ! grep -q "^reg_mr .* ret=-12$" "$LAB_TRACE"; then
	say "The kernel refused none of your program's registrations with ENOMEM ($n tried): register twice RLIMIT_MEMLOCK bytes, the one that must fail." "内核没有以 ENOMEM 拒绝你的程序的任何一次注册（共 $n 次）：注册 RLIMIT_MEMLOCK 两倍的字节数，那次才应当失败。"
	exit 1
fi
if ! grep -Eq "lkey=0x[0-9a-f]+ rkey=0x[0-9a-f]+" "$LAB_OUT"; then
	say "The kernel registered your buffer, but the output has no line with lkey=0x… rkey=0x…: print mr->lkey and mr->rkey." "内核注册了你的缓冲区，但输出里没有 lkey=0x… rkey=0x… 这一行：打印 mr->lkey 和 mr->rkey。"
	exit 1
fi
if ! grep -q "errno=12" "$LAB_OUT" || [ "$LAB_EXIT" != 0 ]; then
	say "The kernel refused the large registration with ENOMEM, but your program did not print errno=12 and exit 0 (yours: $LAB_EXIT)." "内核以 ENOMEM 拒绝了大的那次注册，但你的程序没有打印 errno=12 并以 0 退出（你的退出状态：$LAB_EXIT）。"
	exit 1
fi
say "The kernel registered 4096 bytes for your program, then refused the large registration with ENOMEM: your program runs without CAP_IPC_LOCK, so the pinned pages count against RLIMIT_MEMLOCK." "内核为你的程序注册了 4096 字节，随后以 ENOMEM 拒绝了大的那次注册：你的程序没有 CAP_IPC_LOCK，钉住的页计入 RLIMIT_MEMLOCK。"
