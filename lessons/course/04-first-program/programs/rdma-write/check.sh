#!/bin/sh
# Exercise 3: the peer's buffer must hold the message, and rxe0 must have
# sent packets (a WRITE the peer's CPU never saw: the peer posts nothing).
say() { if [ "$LAB_LANG" = zh ]; then echo "$2"; else echo "$1"; fi; }
count() { awk -v d="$1" -v n="$2" '$1==d && $2==n {print $3}' "$3"; }
sent0=$(count rxe0 sent_pkts "$LAB_COUNTERS_BEFORE"); sent1=$(count rxe0 sent_pkts "$LAB_COUNTERS_AFTER")
sent=$(( ${sent1:-0} - ${sent0:-0} ))
if ! grep -q "^received: hello, rdma$" "$LAB_PEER_OUT"; then
	got=$(grep "^received:" "$LAB_PEER_OUT")
	say "The peer's buffer does not hold \"hello, rdma\" (the peer reports: ${got:-nothing}). rxe0 sent $sent packets during your run." "对端的缓冲区里没有「hello, rdma」（对端报告：${got:-无}）。你运行期间 rxe0 发送了 $sent 个包。"
	exit 1
fi
if [ "$LAB_EXIT" != 0 ]; then
	say "The message arrived, but your program exited with status $LAB_EXIT: it must exit 0 after a successful completion." "消息到了，但你的程序以状态 $LAB_EXIT 退出：成功的完成之后应以 0 退出。"
	exit 1
fi
if [ "$sent" -lt 1 ]; then
	say "rxe0's sent_pkts did not move: the data did not go over the device." "rxe0 的 sent_pkts 没有变化：数据没有经过设备。"
	exit 1
fi
say "The peer's buffer holds \"hello, rdma\"; rxe0 sent $sent packets; the peer posted no receive and ran no code for it." "对端缓冲区里是「hello, rdma」；rxe0 发送了 $sent 个包；对端没有提交接收，也没有为此运行任何代码。"
