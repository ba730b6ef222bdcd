#!/bin/sh
# "WRITE_WITH_IMM as the signal", judged by the peer's own view: its
# RECV's completion (opcode, immediate flag, imm_data, byte_len) and a copy
# of its buffer the peer took the moment that completion came. A program
# cannot print any of it: only a WRITE_WITH_IMM that reached rxe1 makes a
# RECV_RDMA_WITH_IMM completion there.
say() { if [ "$LAB_LANG" = zh ]; then echo "$2"; else echo "$1"; fi; }
count() { awk -v d="$1" -v n="$2" '$1==d && $2==n {print $3}' "$3"; }
sent0=$(count rxe0 sent_pkts "$LAB_COUNTERS_BEFORE"); sent1=$(count rxe0 sent_pkts "$LAB_COUNTERS_AFTER")
sent=$(( ${sent1:-0} - ${sent0:-0} ))
if ! grep -q "^connected: yes$" "$LAB_PEER_OUT"; then
	say "The peer's QP was never connected to yours, and its RECVs got no completion: call connect_to_peer() before you post. rxe0 sent $sent packets during your run." "对端的 QP 从未连接到你的 QP，它的 RECV 也没有得到任何完成：提交之前先调用 connect_to_peer()。你运行期间 rxe0 发送了 $sent 个包。"
	exit 1
fi
n=$(sed -n 's/^completions: \([0-9]*\)$/\1/p' "$LAB_PEER_OUT" | head -1)
if [ "${n:-0}" = 0 ]; then
	say "The peer's RECVs got no completion: nothing signalled it (rxe0 sent $sent packets during your run). A plain IBV_WR_RDMA_WRITE is silent at the receiver; IBV_WR_RDMA_WRITE_WITH_IMM consumes one of the peer's RECVs and completes it." "对端的 RECV 没有得到任何完成：没有任何东西通知它（你运行期间 rxe0 发送了 $sent 个包）。普通的 IBV_WR_RDMA_WRITE 在接收端是无声的；IBV_WR_RDMA_WRITE_WITH_IMM 会消耗对端的一个 RECV 并让它完成。"
	exit 1
fi
first=$(grep "^completion 1: " "$LAB_PEER_OUT" | head -1 | cut -c1-200)
case $first in
*"status success, "*) ;;
*)
	st=${first#completion 1: status }
	say "The peer's RECV completed with an error: $st. A SEND's payload has nowhere to go in the peer's RECV, which has no buffer: the data must come by a WRITE." "对端的 RECV 以错误完成：$st。对端的 RECV 不带缓冲区，SEND 的载荷在那里无处可放：数据必须用 WRITE 送过去。"
	exit 1
	;;
esac
case $first in
*"opcode RECV_RDMA_WITH_IMM, imm yes,"*) ;;
*)
	op=$(echo "$first" | sed -n 's/.*opcode \([A-Z_a-z]*\), imm \([a-z]*\),.*/\1, \2/p')
	say "The peer's RECV completed, but not as a WRITE with immediate (opcode and immediate flag: $op): IBV_WC_RECV is what a SEND makes. Post IBV_WR_RDMA_WRITE_WITH_IMM." "对端的 RECV 完成了，但不是带立即数的 WRITE（操作码和立即数标志：$op）：IBV_WC_RECV 是 SEND 产生的。请提交 IBV_WR_RDMA_WRITE_WITH_IMM。"
	exit 1
	;;
esac
imm=$(echo "$first" | sed -n 's/.*imm_data \([0-9]*\) .*/\1/p')
len=$(echo "$first" | sed -n 's/.*byte_len \([0-9]*\)$/\1/p')
imm=${imm:-0}
len=${len:-0}
if [ "$len" != 10 ] && [ "$len" != 11 ]; then
	say "The peer's completion says $len bytes were written by the WRITE_WITH_IMM itself: it must carry msg (the sizeof msg bytes, 11), so the signal and the data are one work request." "对端的完成显示 WRITE_WITH_IMM 本身写入了 $len 字节：它必须带上 msg（sizeof msg 个字节，即 11），让信号和数据是同一个工作请求。"
	exit 1
fi
if [ "$imm" != "$len" ]; then
	swapped=$(( ((len & 255) << 24) | (((len >> 8) & 255) << 16) | (((len >> 16) & 255) << 8) | ((len >> 24) & 255) ))
	if [ "$imm" = "$swapped" ]; then
		say "The peer read the immediate as $imm, not $len: its bytes are reversed. imm_data travels in network byte order: set wr.imm_data = htonl($len); the receiver reads it with ntohl." "对端读到的立即数是 $imm，不是 $len：字节顺序反了。imm_data 以网络字节序传输：设置 wr.imm_data = htonl($len)；接收方用 ntohl 读取。"
	else
		say "The peer read the immediate as $imm, but $len bytes were written: the immediate must tell the receiver how many bytes landed (htonl of sizeof msg)." "对端读到的立即数是 $imm，但写入了 $len 字节：立即数要告诉接收方落下了多少字节（sizeof msg 的 htonl）。"
	fi
	exit 1
fi
at=$(grep "^buffer at completion 1: " "$LAB_PEER_OUT" | head -1 | cut -c1-120)
case $at in
'buffer at completion 1: "hello, imm"') ;;
*)
	held=${at#buffer at completion 1: }
	[ "$held" = '""' ] && held=""
	say "When the peer's completion arrived its buffer did not hold \"hello, imm\" but ${held:-nothing}: the signal came before the data. Write msg with the WRITE_WITH_IMM itself." "对端的完成到达时，它的缓冲区里不是「hello, imm」，而是 ${held:-空的}：信号先于数据到了。请用 WRITE_WITH_IMM 本身写入 msg。"
	exit 1
	;;
esac
if [ "$LAB_EXIT" != 0 ]; then
	say "The peer got the data and the signal, but your program exited with status $LAB_EXIT: it must exit 0 after its completion succeeded." "对端收到了数据和信号，但你的程序以状态 $LAB_EXIT 退出：自己的完成成功之后应以 0 退出。"
	exit 1
fi
say "The peer's RECV completed as IBV_WC_RECV_RDMA_WITH_IMM with immediate $imm (ntohl) for the $len bytes written, and at that moment its buffer already held \"hello, imm\"; rxe0 sent $sent packets." "对端的 RECV 以 IBV_WC_RECV_RDMA_WITH_IMM 完成，立即数 $imm（ntohl 之后）对应写入的 $len 字节；那一刻它的缓冲区里已经是「hello, imm」；rxe0 发送了 $sent 个包。"
