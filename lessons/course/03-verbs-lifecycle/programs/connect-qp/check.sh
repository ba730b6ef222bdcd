#!/bin/sh
# "Connect a QP by hand", judged by what the program cannot print: the
# ibv_modify_qp calls the kernel saw it make and what the kernel answered
# (LAB_TRACE: "modify_qp prog PID state=N mask=0xM ret=R"), and the peer's
# own report of the TCP exchange, its QP's connection and what its RECV got.
say() { if [ "$LAB_LANG" = zh ]; then echo "$2"; else echo "$1"; fi; }
untraced=""
if grep -q "^# " "$LAB_TRACE" 2>/dev/null; then
	untraced=$(say "(The lab could not record every call: $(grep '^# ' "$LAB_TRACE" | head -3 | sed 's/^# //' | tr '\n' ';'))" "（实验室这次没能完整记录内核看到的调用。）")
fi
# The states the kernel accepted, in order, and the first refusal.
accepted=""
refused=""
while read -r ev comm pid rest; do
	[ "$ev" = modify_qp ] || continue
	state=""
	mask=1
	ret=""
	for f in $rest; do
		case $f in
		state=*) state=${f#state=} ;;
		mask=*) mask=${f#mask=} ;;
		ret=*) ret=${f#ret=} ;;
		esac
	done
	case $state in
	0) name=RESET ;; 1) name=INIT ;; 2) name=RTR ;; 3) name=RTS ;; 4) name=SQD ;; 5) name=SQE ;; 6) name=ERR ;; *) name="?" ;;
	esac
	[ $((mask & 1)) = 1 ] || name="(no IBV_QP_STATE)"
	if [ "$ret" = 0 ]; then
		accepted="$accepted $name "
	elif [ -z "$refused" ]; then
		refused="$name ret=${ret:-none}"
	fi
done <"$LAB_TRACE"
refusal=""
if [ -n "$refused" ]; then
	refusal=$(say "The kernel refused one of your ibv_modify_qp calls: $refused (-22 is EINVAL: an attribute the transition requires is missing from the mask, or the QP is not in the state the move starts from)." "内核拒绝了你的一次 ibv_modify_qp 调用：$refused（-22 即 EINVAL：掩码里缺少这次迁移必需的属性，或者 QP 不处在这次迁移的起始状态）。")
fi
peer=$(grep "^exchange:" "$LAB_PEER_OUT")
case " $accepted " in
*" INIT "*) ;;
*)
	say "The kernel saw no ibv_modify_qp of your program move a QP to INIT: text in the output does not count. $refusal $untraced" "内核没有看到你的程序用 ibv_modify_qp 把 QP 迁移到 INIT：输出里的文字不算数。$refusal $untraced"
	exit 1
	;;
esac
if grep -q "^exchange: nothing" "$LAB_PEER_OUT" || [ -z "$peer" ]; then
	say "Your QP reached INIT, but the peer got no QPN, PSN and GID on its TCP socket: call exchange() after ibv_query_gid." "你的 QP 到了 INIT，但对端的 TCP 套接字上没有收到 QPN、PSN 和 GID：在 ibv_query_gid 之后调用 exchange()。"
	exit 1
fi
if ! grep -q "^connected: yes" "$LAB_PEER_OUT"; then
	say "The peer could not use what your program sent ($peer; $(grep '^connected:' "$LAB_PEER_OUT")). The GID must be rxe0's index 1, queried with ibv_query_gid." "对端无法使用你的程序发来的内容（$peer；$(grep '^connected:' "$LAB_PEER_OUT")）。GID 必须是用 ibv_query_gid 查询到的 rxe0 索引 1。"
	exit 1
fi
case " $accepted " in
*" INIT "*" RTR "*) ;;
*)
	say "The peer has your QPN, PSN and GID, but the kernel accepted no move of your QP from INIT to RTR. $refusal $untraced" "对端拿到了你的 QPN、PSN 和 GID，但内核没有接受你的 QP 从 INIT 到 RTR 的迁移。$refusal $untraced"
	exit 1
	;;
esac
case " $accepted " in
*" INIT "*" RTR "*" RTS "*) ;;
*)
	say "Your QP reached RTR, but the kernel accepted no move to RTS: only RTS sends. $refusal $untraced" "你的 QP 到了 RTR，但内核没有接受到 RTS 的迁移：只有 RTS 才能发送。$refusal $untraced"
	exit 1
	;;
esac
mine=$(tr -d : </sys/class/infiniband/rxe0/ports/1/gids/1)
if ! grep -q "^received: hello, qp " "$LAB_PEER_OUT"; then
	got=$(grep -E "^(received|receive failed):" "$LAB_PEER_OUT")
	hint=""
	case $peer in
	*"GID $mine "*) ;;
	*) hint=$(say "The GID you sent is not rxe0's GID index 1 ($mine): the peer's acknowledgements went elsewhere." "你发出的 GID 不是 rxe0 的 GID 索引 1（$mine）：对端的确认发到了别处。") ;;
	esac
	say "Your QP walked INIT, RTR and RTS, but the peer's RECV did not get \"hello, qp\" (the peer reports: ${got:-nothing}; your program exited with status $LAB_EXIT). Post one signaled IBV_WR_SEND of msg and wait for its completion: a failed completion's status says why. $hint" "你的 QP 走过了 INIT、RTR 和 RTS，但对端的 RECV 没有收到「hello, qp」（对端报告：${got:-无}；你的程序的退出状态：$LAB_EXIT）。提交一个带信号的 IBV_WR_SEND 发送 msg，并等它完成：失败的完成的状态会说明原因。$hint"
	exit 1
fi
if [ "$LAB_EXIT" != 0 ]; then
	say "The peer received \"hello, qp\", but your program exited with status $LAB_EXIT: it must exit 0 after the SEND's successful completion." "对端收到了「hello, qp」，但你的程序以状态 $LAB_EXIT 退出：SEND 成功完成之后应以 0 退出。"
	exit 1
fi
say "The kernel accepted your QP's moves to INIT, RTR and RTS; the peer got your QPN, PSN and GID over TCP and its RECV received \"hello, qp\" from your SEND." "内核接受了你的 QP 到 INIT、RTR 和 RTS 的迁移；对端通过 TCP 拿到了你的 QPN、PSN 和 GID，它的 RECV 收到了你的 SEND 发来的「hello, qp」。"
