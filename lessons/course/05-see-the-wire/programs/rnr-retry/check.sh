#!/bin/sh
# "Survive a late RECV", judged by what the program cannot print: the
# peer's report (the token it issued this run and what its one RECV got)
# and the RNR counters of both rxe devices, before and after the run
# (rxe1 sent the RNR NAKs, rxe0 received them and either retried or gave
# up).
say() { if [ "$LAB_LANG" = zh ]; then echo "$2"; else echo "$1"; fi; }
count() { awk -v d="$1" -v n="$2" '$1==d && $2==n {print $3}' "$3"; }
delta() { a=$(count "$1" "$2" "$LAB_COUNTERS_AFTER"); b=$(count "$1" "$2" "$LAB_COUNTERS_BEFORE"); echo $((${a:-0} - ${b:-0})); }
sent=$(delta rxe1 send_rnr_err)
rcvd=$(delta rxe0 rcvd_rnr_err)
gaveup=$(delta rxe0 retry_rnr_exceeded_err)
token=$(sed -n 's/^token: \([0-9a-f]*\)$/\1/p' "$LAB_PEER_OUT")
late=$(sed -n 's/^RECV posted: \([0-9]*\) ms.*/\1/p' "$LAB_PEER_OUT")
counts=$(say "rxe1 sent $sent RNR NAKs (send_rnr_err), rxe0 received $rcvd (rcvd_rnr_err) and its retry_rnr_exceeded_err rose by $gaveup" "rxe1 发出了 $sent 个 RNR NAK（send_rnr_err），rxe0 收到了 $rcvd 个（rcvd_rnr_err），它的 retry_rnr_exceeded_err 增加了 $gaveup")
if grep -q "^exchange: nothing" "$LAB_PEER_OUT" || ! grep -q "^exchange:" "$LAB_PEER_OUT"; then
	say "The peer got nothing on its TCP socket: no QPN, PSN and GID, so it issued its token to no one. Keep the given exchange() call. $counts." "对端的 TCP 套接字上什么也没收到：没有 QPN、PSN 和 GID，它的令牌也就没有发给任何人。保留给定的 exchange() 调用。$counts。"
	exit 1
fi
if ! grep -q "^connected: yes" "$LAB_PEER_OUT"; then
	say "The peer could not use what your program sent ($(grep '^connected:' "$LAB_PEER_OUT")): send rxe0's GID index 1, as the given code does." "对端无法使用你的程序发来的内容（$(grep '^connected:' "$LAB_PEER_OUT")）：像给定的代码那样，发送 rxe0 的 GID 索引 1。"
	exit 1
fi
if [ "$gaveup" -gt 0 ]; then
	say "Your SEND ended in IBV_WC_RNR_RETRY_EXC_ERR: $counts. Each RNR NAK carried the peer's min_rnr_timer (12, 0.64 ms) and asked your QP to wait and send again; it stopped when rnr_retry ran out, while the peer's RECV came ${late:-300} ms after the first NAK. Only rnr_retry 7 keeps retrying until the RECV is there." "你的 SEND 以 IBV_WC_RNR_RETRY_EXC_ERR 结束：$counts。每个 RNR NAK 都带着对端的 min_rnr_timer（12，即 0.64 毫秒），让你的 QP 等一等再发；rnr_retry 用完时它就停了，而对端的 RECV 在第一个 NAK 之后 ${late:-300} 毫秒才到。只有 rnr_retry 为 7 才会一直重试到 RECV 出现。"
	exit 1
fi
if ! grep -q "^received: token $token (" "$LAB_PEER_OUT" || [ -z "$token" ]; then
	got=$(grep -E "^(received|receive failed):" "$LAB_PEER_OUT")
	say "The peer's RECV did not get \"token $token\", the token it issued on this run (the peer reports: ${got:-nothing}; your program exited with status $LAB_EXIT; $counts). SEND \"token \" and the token exchange() returned, with its terminating zero, and wait for the completion within the deadline." "对端的 RECV 没有收到「token $token」——这是它本次运行发出的令牌（对端报告：${got:-无}；你的程序的退出状态：$LAB_EXIT；$counts）。用 SEND 发送「token 」加上 exchange() 返回的令牌（带结尾的零），并在截止时间内等到它的完成。"
	exit 1
fi
if [ "$rcvd" -lt 1 ] || [ "$sent" -lt 1 ]; then
	say "The peer's RECV got the token, but no RNR NAK was counted ($counts): this exercise is about a SEND that meets an empty receive queue first." "对端的 RECV 收到了令牌，但没有计到 RNR NAK（$counts）：这个练习要的是一个先遇到空接收队列的 SEND。"
	exit 1
fi
if [ "$LAB_EXIT" != 0 ]; then
	say "The peer's RECV got your token, but your program exited with status $LAB_EXIT: it must exit 0 after the SEND's successful completion." "对端的 RECV 收到了你的令牌，但你的程序以状态 $LAB_EXIT 退出：SEND 成功完成之后应以 0 退出。"
	exit 1
fi
say "The peer's RECV got \"token $token\", the token it issued on this run, after $counts: your QP waited and sent again after each RNR NAK until the peer's RECV came, ${late:-300} ms after the first." "对端的 RECV 收到了「token $token」——它本次运行发出的令牌；在此之前 $counts：你的 QP 每收到一个 RNR NAK 就等一等再发，直到对端的 RECV 在第一个 NAK 之后 ${late:-300} 毫秒出现。"
