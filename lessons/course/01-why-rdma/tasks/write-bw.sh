#!/bin/sh
# Task "write-bw" of lesson 01: the learner ran ib_write_bw from one
# Soft-RoCE device to the other with 64 KiB messages and saved the client's
# report in ~/bw.txt (the terminal's user is learner, home /home/learner).
#
# Two things must agree: the report (perftest's table: device, MTU, a
# result row for 65536 bytes with its iteration count and a bandwidth) and
# the sending device's own counter, hw_counters/sent_pkts, which cannot
# have grown by less than iterations × packets per message (65536 / MTU)
# if those WRITEs really went out. The counter counts since the guest
# booted, so earlier runs only add to it. Messages follow LAB_LANG.

f=${BW_REPORT:-/home/learner/bw.txt}    # BW_REPORT, SYSFS: for lessons' script test
sys=${SYSFS:-/sys}
say() { if [ "$LAB_LANG" = zh ]; then printf '%s\n' "$2"; else printf '%s\n' "$1"; fi; }

if [ -e "$f" ] && [ ! -s "$f" ]; then
	# tee made the file but the client printed no report: it could not
	# reach a server (its error goes to stderr, not through tee).
	say "$f is empty: the client printed no report. Is the server running? Start it on rxe1 first (the line ending in &), then run the client again." \
		"$f 是空的：客户端没有输出报告。服务端在运行吗？先在 rxe1 上启动服务端（以 & 结尾的那一行），再运行一次客户端。"
	exit 1
fi
if [ ! -s "$f" ]; then
	say "No report in $f yet: run the client with | tee $f at the end of its command line." \
		"还没有 $f：在客户端命令行的末尾加上 | tee $f 再运行一次。"
	exit 1
fi
# This script runs as root and the report is the learner's: a plain file
# (not a link to someone else's), read once, at most 64 KiB of it (a real
# report is 2-3 KiB), into a file of root's.
if [ -L "$f" ] || [ ! -f "$f" ]; then
	say "$f is not a plain file: save the client's report itself there (| tee $f)." \
		"$f 不是普通文件：请把客户端的报告本身保存在那里（| tee $f）。"
	exit 1
fi
r=$(mktemp) || exit 2
trap 'rm -f "$r"' EXIT
head -c 65536 "$f" > "$r"
if ! grep -q 'RDMA_Write BW Test' "$r"; then
	say "$f is not an ib_write_bw report (no \"RDMA_Write BW Test\" header)." \
		"$f 不是 ib_write_bw 的输出（没有 \"RDMA_Write BW Test\" 标题）。"
	exit 1
fi
dev=$(sed -n 's/.*Device *: *\([a-z0-9_]*\).*/\1/p' "$r" | head -n 1)
mtu=$(sed -n 's/.*Mtu *: *\([0-9]*\).*/\1/p' "$r" | head -n 1)
# The result row: "#bytes #iterations BW-peak BW-average MsgRate".
row=$(awk '$1 == 65536 && $2 ~ /^[0-9]+$/ && NF >= 4 { print $2, $4; exit }' "$r")
iters=${row% *}
bw=${row#* }
# The bandwidth's unit, from the header: MB/sec by default, Gb/sec with
# --report_gbits.
unit=$(sed -n 's/.*BW average\[\([^]]*\)\].*/\1/p' "$r" | head -n 1)
case "$unit" in
"" | *[!A-Za-z/]* | ?????????*) unit=MB/sec ;;
esac
if [ -z "$row" ]; then
	say "No result row for 65536-byte messages in $f: did you pass -s 65536, and did the run finish? (perftest in this emulated machine sometimes gives up after the address exchange: start both commands again.)" \
		"$f 里没有 65536 字节消息的结果行：加了 -s 65536 吗？运行结束了吗？（在这台模拟的机器里，perftest 偶尔会在交换地址之后放弃：把两条命令重新运行一遍。）"
	exit 1
fi
case "$dev" in
rxe0 | rxe1) ;;
*)
	say "The report names device \"$dev\", not rxe0 or rxe1." "报告里的设备是 \"$dev\"，不是 rxe0 或 rxe1。"
	exit 1
	;;
esac
# The arithmetic below stays far from 64-bit overflow (issue 43 fall 2: a
# forged count of 2^58 WRITEs times 64 packets each wrapped to 0 packets
# needed): at most 10^6 iterations, and an MTU RoCE has.
case "$iters" in
????????*)
	iters=too-many ;;
esac
if [ "$iters" = too-many ] || [ "$iters" -gt 1000000 ]; then
	say "The report claims more than 1000000 WRITEs, more than this machine sends in the task's time; the task asks for a run of 200 (-n 200): save the client's own report." \
		"报告声称超过 1000000 个 WRITE，比这台机器在任务时间内能发出的还多；任务要求运行 200 个（-n 200）：请保存客户端自己的报告。"
	exit 1
fi
if [ "$iters" -lt 100 ]; then
	# A report with 0 iterations needs 0 packets: it would prove nothing.
	say "The report says $iters WRITEs; the task asks for a run of 200 (-n 200)." \
		"报告里只有 $iters 个 WRITE；任务要求运行 200 个（-n 200）。"
	exit 1
fi
case "$mtu" in
256 | 512 | 1024 | 2048 | 4096) ;;
"") mtu=4096 ;;
*)
	say "The report says MTU $mtu; RoCE's MTU is one of 256, 512, 1024, 2048 and 4096: save the client's own report." \
		"报告里的 MTU 是 $mtu；RoCE 的 MTU 只能是 256、512、1024、2048 或 4096：请保存客户端自己的报告。"
	exit 1
	;;
esac
case "$bw" in
"" | *[!0-9.]* | ?????????????*) bw="?" ;;
esac
per=$(((65536 + mtu - 1) / mtu))
need=$((iters * per))
sent=$(cat "$sys/class/infiniband/$dev/ports/1/hw_counters/sent_pkts" 2>/dev/null || echo 0)
case "$sent" in
"" | *[!0-9]* | ???????????????????*) sent=0 ;;
esac
if [ "$sent" -lt "$need" ]; then
	say "The report says $iters WRITEs of 64 KiB from $dev (at MTU $mtu, $need packets), but $dev's sent_pkts counter is only $sent: run it again in this machine." \
		"报告说 $dev 发出了 $iters 个 64 KiB 的 WRITE（MTU $mtu，即 $need 个报文），可 $dev 的 sent_pkts 计数器只有 $sent：请在这台机器里重新运行。"
	exit 1
fi
say "$dev sent $iters RDMA WRITEs of 64 KiB at $bw $unit average (measured here: Soft-RoCE in an emulated machine, not a hardware figure); its sent_pkts counter is $sent, at least the $need packets they need." \
	"$dev 发出了 $iters 个 64 KiB 的 RDMA WRITE，平均 $bw $unit（在这里测得：模拟机器里的 Soft-RoCE，不是硬件数字）；它的 sent_pkts 计数器是 $sent，不少于这些 WRITE 所需的 $need 个报文。"
exit 0
