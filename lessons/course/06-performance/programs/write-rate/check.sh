#!/bin/sh
# The tuning challenge. The peer ran ib_write_bw -s 64 (rxe0 to rxe1)
# beside the learner's program, on the same CPU, and sampled every 10 ms
# its own QP's PSN (the learner's WRITEs, nothing else) and rxe1's
# received-packets counter (both flows; ib_write_bw's packets are the
# counter's less the learner's). Per chunk of 0.1 s of the learner's busy
# part, the ratio of the two; the check reads the median of those ratios
# and the median's 95% confidence interval (order statistics), never what
# the program printed. The verdict is firm only when the interval lies
# wholly on one side of the target; the figures are compared as shown
# (two decimals).
TARGET=1.30
MSG='lesson 06: sixty-four bytes per RDMA WRITE, as fast as it goes!'
say() { if [ "$LAB_LANG" = zh ]; then echo "$2"; else echo "$1"; fi; }
# num PREFIX WORD: the field after WORD on the peer's first line that
# starts with PREFIX; digits and one dot only, bounded; 0 when missing.
num() {
	v=$(awk -v p="$1" -v w="$2" 'index($0, p) == 1 { for (i = 1; i < NF; i++) if ($i == w) { print $(i + 1); exit } }' "$LAB_PEER_OUT" | tr -cd 0-9. | cut -c1-12)
	echo "${v:-0}"
}
pkts=$(num "learner:" packets); win=$(num "learner:" window_us); chunks=$(num "learner:" chunks)
rate=$(num "rates:" learner); ref=$(num "rates:" reference)
med=$(num "ratio:" median); low=$(num "ratio:" low); high=$(num "ratio:" high)

if ! grep -q "^reference: running$" "$LAB_PEER_OUT"; then
	say "The lab's reference, ib_write_bw, did not start: this says nothing about your program. Run again; if it happens again, reset your machine." \
	    "实验室的参照 ib_write_bw 没有启动：这与你的程序无关。请再运行一次；若再次出现，请重置你的机器。"
	exit 1
fi
if ! grep -q "^connected: yes$" "$LAB_PEER_OUT"; then
	say "The peer saw no connection: your QP never told it its number (the starter's connect_to_peer does that)." \
	    "对端没有看到连接：你的 QP 从未把自己的编号告诉它（初始代码里的 connect_to_peer 会做这件事）。"
	exit 1
fi
if [ "${pkts%.*}" -eq 0 ]; then
	say "The peer's QP received no WRITE packets: nothing was measured." \
	    "对端的 QP 没有收到任何 WRITE 包：没有可测量的东西。"
	exit 1
fi
if [ "$LAB_EXIT" != 0 ]; then
	say "Your program exited with status $LAB_EXIT after $pkts WRITEs reached the peer: it must wait for its last completions and exit 0." \
	    "有 $pkts 个 WRITE 到达对端之后，你的程序以状态 $LAB_EXIT 退出：它应等到最后的完成，然后以 0 退出。"
	exit 1
fi
if ! grep -qxF "received: $MSG" "$LAB_PEER_OUT"; then
	say "The peer's buffer does not hold the 64-byte message: every WRITE must carry all of msg (63 characters and the terminating zero)." \
	    "对端缓冲区里不是那条 64 字节的消息：每个 WRITE 都必须带上完整的 msg（63 个字符加结尾的零）。"
	exit 1
fi
alone=$(num "learner:" alone)
if [ "${win%.*}" -lt 3000000 ]; then
	say "Your WRITEs reached the peer within $(( ${win%.*} / 1000 )) ms, with ib_write_bw beside them in $chunks chunks of 0.1 s: too little to measure a rate. Keep writing for SECONDS (5) seconds, as the starter does." \
	    "你的 WRITE 在 $(( ${win%.*} / 1000 )) 毫秒内到达对端，其中与 ib_write_bw 同时进行的只有 $chunks 个 0.1 秒的时间段：太少，测不出速率。像初始代码那样持续写 SECONDS（5）秒。"
	exit 1
fi
# The learner wrote long enough, but the lab's reference overlapped too
# little of it (on a loaded lab VM ib_write_bw can start seconds late):
# the lab's fault, said as such, not the program's.
if [ "${chunks%.*}" -lt 20 ]; then
	say "Your WRITEs kept going for $(( ${win%.*} / 1000 )) ms, but the lab's reference, ib_write_bw, was sending beside them in only $chunks chunks of 0.1 s (not in $alone others: it started late or stopped early on a busy machine). That is too little to compare, and says nothing about your program. Run again." \
	    "你的 WRITE 持续了 $(( ${win%.*} / 1000 )) 毫秒，但实验室的参照 ib_write_bw 只在其中 $chunks 个 0.1 秒的时间段里同时发送（另有 $alone 个时间段没有：机器繁忙时它启动得晚或停得早）。这太少，无法比较，也与你的程序无关。请再运行一次。"
	exit 1
fi
verdict=$(awk -v lo="$low" -v hi="$high" -v t="$TARGET" 'BEGIN { print (lo + 0 >= t + 0) ? "pass" : (hi + 0 < t + 0) ? "fail" : "close" }')
# The ratio and its interval as the words below quote them, for the run's
# record and the class leaderboard: the lab takes these lines out of what
# the learner reads (lessons/program.go, "figure NAME VALUE").
echo "figure ratio $med"
echo "figure ratio_low $low"
echo "figure ratio_high $high"
facts_en="Your program: $pkts WRITEs of 64 bytes counted at the peer's QP, a median of $rate per second; ib_write_bw -s 64, beside it on the same devices and the same CPU: $ref per second. Your WRITEs per ib_write_bw WRITE, in $chunks chunks of 0.1 s: median $med, its 95% confidence interval $low–$high; the target is $TARGET. Measured here, on Soft-RoCE in an emulated guest: compare the ratio, never these rates with a hardware NIC's."
facts_zh="你的程序：在对端 QP 上数到 $pkts 个 64 字节的 WRITE，中位数为每秒 $rate 次；同时在同样设备、同一个 CPU 上运行的 ib_write_bw -s 64：每秒 $ref 次。在 $chunks 个 0.1 秒的时间段里，你的 WRITE 数与 ib_write_bw 的之比：中位数 $med，其 95% 置信区间 $low–$high；目标是 $TARGET。这是在这里测得的（模拟的虚拟机里的 Soft-RoCE）：只比较比值，不要拿这些速率去和硬件网卡比。"
case $verdict in
pass)
	say "$facts_en The whole interval is at or above the target: passed." "$facts_zh整个区间都达到目标：通过。"
	exit 0 ;;
fail)
	say "$facts_en The whole interval is below the target. The hints, one at a time, say where the time goes." \
	    "$facts_zh整个区间都低于目标。提示会逐条告诉你时间花在了哪里。"
	exit 1 ;;
*)
	say "$facts_en The target lies inside the interval: too close to call on this machine. Run again; if it stays this close, your program is near the target." \
	    "$facts_zh目标落在区间之内：在这台机器上太接近，无法判定。请再运行一次；如果仍然这么接近，说明你的程序已经接近目标。"
	exit 1 ;;
esac
