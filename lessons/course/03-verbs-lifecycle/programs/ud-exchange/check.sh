#!/bin/sh
# "A UD exchange", judged by what the program cannot print: the kernel's
# record of its QP's moves and its address handle (LAB_TRACE), and the
# peer's own report: the token it sent, and whether what came back from the
# learner's QP held the 40-byte GRH area the learner received, then the token.
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
	refusal=$(say "The kernel refused one of your ibv_modify_qp calls: $refused (-22 is EINVAL: for a UD QP, INIT needs IBV_QP_PKEY_INDEX, IBV_QP_PORT and IBV_QP_QKEY, RTS IBV_QP_SQ_PSN)." "内核拒绝了你的一次 ibv_modify_qp 调用：$refused（-22 即 EINVAL：UD QP 的 INIT 需要 IBV_QP_PKEY_INDEX、IBV_QP_PORT 和 IBV_QP_QKEY，RTS 需要 IBV_QP_SQ_PSN）。")
fi
shown=$(echo $accepted)
case " $accepted " in
*" INIT "*" RTR "*" RTS "*) ;;
*)
	say "The kernel did not accept moves of a QP of your program to INIT, RTR and RTS (accepted: ${shown:-none}): text in the output does not count. $refusal $untraced" "内核没有接受你的程序把 QP 依次迁移到 INIT、RTR 和 RTS（已接受的：${shown:-无}）：输出里的文字不算数。$refusal $untraced"
	exit 1
	;;
esac
if ! grep -q "^sent: ud token" "$LAB_PEER_OUT"; then
	ex=$(grep '^exchange:' "$LAB_PEER_OUT")
	say "Your QP reached RTS, but the peer sent no datagram: it got no usable \"QPN QKEY GID\" line on its socket (the peer reports: ${ex:-nothing}). Query GID index 1 and call exchange()." "你的 QP 到了 RTS，但对端没有发出数据报：它的套接字上没有收到可用的「QPN QKEY GID」一行（对端报告：${ex:-无}）。查询 GID 索引 1，再调用 exchange()。"
	exit 1
fi
if ! grep -q "^create_ah .* ret=0$" "$LAB_TRACE"; then
	say "The peer sent its datagram, but the kernel made no address handle for your program: a UD SEND names its destination with ibv_create_ah. $untraced" "对端发出了数据报，但内核没有为你的程序创建地址句柄：UD 的 SEND 用 ibv_create_ah 指明目的地。$untraced"
	exit 1
fi
if ! grep -q "^received: .*(the learner's)" "$LAB_PEER_OUT"; then
	say "The peer got nothing back from your QP ($(grep -E '^(received|receive failed):' "$LAB_PEER_OUT")): post the RECV before exchange(), wait for it, then SEND the wc.byte_len bytes of buf to the peer's QPN and Q_Key." "对端没有从你的 QP 收到任何东西（$(grep -E '^(received|receive failed):' "$LAB_PEER_OUT")）：在 exchange() 之前提交 RECV，等它完成，再把 buf 的 wc.byte_len 个字节 SEND 给对端的 QPN 和 Q_Key。"
	exit 1
fi
if ! grep -q "^echo GRH: IPv4 10.0.0.2 -> 10.0.0.1$" "$LAB_PEER_OUT" || ! grep -q "^echo payload: the token sent$" "$LAB_PEER_OUT"; then
	say "Your datagram reached the peer, but it is not the 40-byte GRH area and then the token your RECV got ($(grep '^echo' "$LAB_PEER_OUT" | tr '\n' ' ')): send buf from byte 0, wc.byte_len bytes." "你的数据报到了对端，但它不是你的 RECV 收到的 40 字节 GRH 区域加令牌（$(grep '^echo' "$LAB_PEER_OUT" | tr '\n' ' ')）：从第 0 字节起发送 buf 的 wc.byte_len 个字节。"
	exit 1
fi
if ! grep -q "payload at byte 40" "$LAB_OUT" || [ "$LAB_EXIT" != 0 ]; then
	say "The peer got its datagram back, GRH area and all, but your program did not print \"payload at byte 40\" and exit 0 (yours: $LAB_EXIT)." "对端收回了它的数据报，连同 GRH 区域，但你的程序没有打印「payload at byte 40」并以 0 退出（你的退出状态：$LAB_EXIT）。"
	exit 1
fi
say "The kernel accepted your UD QP's moves to INIT, RTR and RTS and made your address handle; the peer got back from your QP the 40-byte GRH area your RECV received (its IPv4 header: 10.0.0.2 -> 10.0.0.1) and then its token." "内核接受了你的 UD QP 到 INIT、RTR 和 RTS 的迁移，并创建了你的地址句柄；对端从你的 QP 收回了你的 RECV 收到的 40 字节 GRH 区域（其中的 IPv4 头：10.0.0.2 -> 10.0.0.1），后面是它的令牌。"
