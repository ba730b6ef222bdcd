#!/bin/sh
# "An SRQ server", judged by what the program cannot print: the kernel's
# record (LAB_TRACE) of its ibv_create_srq and of each QP it created, with
# the SRQ the device was told that QP takes its receives from; and the
# peer's report of what each of its three clients got back, on its own QP,
# for requests that carry a token new in every run.
say() { if [ "$LAB_LANG" = zh ]; then echo "$2"; else echo "$1"; fi; }
clients=3
untraced=""
if grep -q "^# " "$LAB_TRACE" 2>/dev/null; then
	untraced=$(say "(The lab could not record every call: $(grep '^# ' "$LAB_TRACE" | head -3 | sed 's/^# //' | tr '\n' ';'))" "（实验室这次没能完整记录内核看到的调用。）")
fi
srqs=$(grep -c "^create_srq .* ret=0$" "$LAB_TRACE" 2>/dev/null)
if [ "${srqs:-0}" = 0 ]; then
	refused=$(grep "^create_srq " "$LAB_TRACE" 2>/dev/null | head -1 | sed 's/.*ret=//')
	if [ -n "$refused" ]; then
		say "The kernel refused your ibv_create_srq (ret=$refused; -22 is EINVAL: max_wr or max_sge beyond the device's max_srq_wr, max_srq_sge). $untraced" "内核拒绝了你的 ibv_create_srq（ret=$refused；-22 即 EINVAL：max_wr 或 max_sge 超出了设备的 max_srq_wr、max_srq_sge）。$untraced"
	else
		say "The kernel saw no ibv_create_srq of your program: text in the output does not count. Create the shared receive queue first (TODO 1). $untraced" "内核没有看到你的程序调用 ibv_create_srq：输出里的文字不算数。先创建共享接收队列（TODO 1）。$untraced"
	fi
	exit 1
fi
# The QPs the device created, and how many of them take their receives
# from an SRQ (srq= not 0x0). Without the entry probe there is no srq=.
made=$(grep -c "^create_qp .* ret=0$" "$LAB_TRACE")
attached=$(grep "^create_qp .* ret=0$" "$LAB_TRACE" | grep -c "srq=0x[0-9a-f]*[1-9a-f][0-9a-f]* ")
if grep -q "^create_qp .*srq=" "$LAB_TRACE"; then
	if [ "$attached" -lt "$clients" ]; then
		say "Your SRQ exists, but the kernel saw only $attached of your $made QPs attached to it: a QP created without init_attr.srq has a receive queue of its own, and the SRQ's receives never reach it (TODO 2)." "你的 SRQ 已经建好，但内核看到你的 $made 个 QP 里只有 $attached 个挂在它上面：创建时没有设置 init_attr.srq 的 QP 有自己的接收队列，SRQ 里的接收请求到不了它（TODO 2）。"
		exit 1
	fi
	seen=$(say "the kernel saw your ibv_create_srq and $attached QPs created on it" "内核看到了你的 ibv_create_srq，以及挂在它上面创建的 $attached 个 QP")
else
	seen=$(say "the kernel saw your ibv_create_srq (which SRQ each QP took could not be recorded) $untraced" "内核看到了你的 ibv_create_srq（没能记录每个 QP 挂在哪个 SRQ 上）$untraced")
fi
if ! grep -q "^connected: yes$" "$LAB_PEER_OUT"; then
	got=$(grep "^connected:" "$LAB_PEER_OUT" | head -1 | cut -c1-120)
	say "Your SRQ and QPs are made, but the peer could not connect its three clients to them (${got:-nothing}; your program exited with status $LAB_EXIT): fill the pool, then connect each QP and call tell_peer()." "你的 SRQ 和 QP 都建好了，但对端没能把它的三个客户端连到它们上面（${got:-无}；你的程序的退出状态：$LAB_EXIT）：先填满接收池，再连接每个 QP 并调用 tell_peer()。"
	exit 1
fi
short=$(grep "^client [0-9]: " "$LAB_PEER_OUT" | grep -v "^client [0-9]: 3 of 3 answered$" | head -3 | cut -c1-200 | awk 'NR > 1 { printf "; " } { printf "%s", $0 }')
if [ -n "$short" ] || ! grep -q "^answered: 9 of 9$" "$LAB_PEER_OUT"; then
	hint=""
	case $short in
	*"a wrong answer"*) hint=$(say "A client got an answer meant for another: it went out on the wrong QP. The QP a request came on is wc.qp_num, not the slot it landed in." "有客户端收到了发给别人的答复：它是从错误的 QP 发出去的。请求来自哪个 QP 看 wc.qp_num，而不是它落在哪个接收槽。") ;;
	*"RNR retry"*) hint=$(say "RNR retry exceeded: a request found the SRQ empty. Post the pool before tell_peer(), and give each slot back with post_slot as soon as its request is copied." "RNR 重试超限：某个请求到达时 SRQ 是空的。在 tell_peer() 之前就填满接收池，每个槽里的请求一复制出来就用 post_slot 把它还回去。") ;;
	esac
	# The peer reports in English; the zh hint says the same in Chinese.
	shortzh=$(echo "$short" | sed -e 's/client \([0-9]\): \([0-9]*\) of \([0-9]*\) answered/客户端 \1 收到 \2 条正确答复（共 \3 条）/g' \
		-e 's/; a wrong answer: "\([^"]*\)" (wanted "\([^"]*\)")/，一条错误答复：「\1」（应为「\2」）/g' \
		-e 's/; send /，发送失败：/g; s/; receive /，接收失败：/g; s/; could not post request \([0-9]*\)/，第 \1 个请求无法提交/g; s/; /；/g')
	say "Not every client got its answers (the peer reports: ${short:-$(grep '^answered:' "$LAB_PEER_OUT")}; your program exited with status $LAB_EXIT). Each request must be answered on the QP it came on, \"ping\" turned into \"pong\". $hint" "不是每个客户端都收到了它的答复（对端报告：${shortzh:-$(grep '^answered:' "$LAB_PEER_OUT" | sed 's/answered: \([0-9]*\) of \([0-9]*\)/共答对 \1 条，应为 \2 条/')}；你的程序的退出状态：$LAB_EXIT）。每个请求都要在它来的那个 QP 上答复，把「ping」换成「pong」。$hint"
	exit 1
fi
if [ "$LAB_EXIT" != 0 ]; then
	say "Every client got its three answers, but your program exited with status $LAB_EXIT: it must exit 0 once every answer completed." "每个客户端都收到了三条答复，但你的程序以状态 $LAB_EXIT 退出：所有答复都完成后应以 0 退出。"
	exit 1
fi
say "All three of the peer's clients got their three answers, each on its own QP; $seen." "对端的三个客户端都收到了各自的三条答复，每条都在自己的 QP 上；$seen。"
