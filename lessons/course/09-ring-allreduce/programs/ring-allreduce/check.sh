#!/bin/sh
# The capstone: the harness (the lab's peer, root) gave every rank inputs
# only it knew, timed each all-reduce and compared every rank's result with
# the sum it computed; it also read rxe's sent_pkts around each all-reduce.
# This script turns its report into the verdict, then runs Open MPI's
# MPI_Allreduce over UCX on the same rxe devices, for comparison.
say() { if [ "$LAB_LANG" = zh ]; then echo "$2"; else echo "$1"; fi; }
start=$(date +%s) # the check's time in all (program.yaml's check_timeout); the verdict must not wait on MPI
budget=${LAB_CHECK_TIMEOUT:-30}
rep="$LAB_PEER_OUT"
total=$(awk '/^verified:/ {print $4}' "$rep")
ok=$(awk '/^verified:/ {print $2}' "$rep")
if [ -z "$total" ]; then
	say "The harness reported nothing (it did not run to the end): $(head -c 300 "$rep")" "测试框架没有给出报告（它没有运行到最后）：$(head -c 300 "$rep")"
	exit 1
fi
diff=$(grep -m1 '^first difference:' "$rep")
if [ -n "$diff" ]; then
	set -- $diff
	# first difference: size N rank R index I want W got G
	say "Wrong sum: for the vector of $4 floats, rank $6 holds ${12} at index $8, but the sum of the $LAB_SIZE inputs there is ${10}. (The harness drew every rank's input for this run and compared all $total results element by element.)" \
		"求和错误：在 $4 个浮点数的向量中，rank $6 的第 $8 个元素是 ${12}，而 $LAB_SIZE 个输入在该处的和是 ${10}。（测试框架为本次运行生成了每个 rank 的输入，并逐元素比较了全部 $total 份结果。）"
	exit 1
fi
# Out of time with every result checked so far right: too slow for the
# run's limit (program.yaml's timeout, 30 s), which a loaded lab VM can be
# by itself (a clean-clone make test beside stress-ng: the solution's
# largest all-reduces took 3.3 s each and its 9th did not finish), so
# the learner is told both, with what finished.
inc=$(grep -m1 '^incomplete:' "$rep")
if [ "$LAB_TIMED_OUT" = 1 ] && [ -n "$inc" ]; then
	set -- $inc
	last=$(awk '/^step / {us = $5} END {printf "%d", us / 1000}' "$rep")
	say "Your ranks ran out of the run's 30 s: $2 of $4 all-reduces finished, and all $ok results checked so far are right; the last one took $last ms here. On a busy lab the emulated CPU and the rxe devices can be this slow, so run it again. If it runs out of time again while the lab is quiet, your program waits too long somewhere (a sleep in a polling loop, for example)." \
		"你的各个 rank 用完了运行时限 30 秒：$4 次 all-reduce 中完成了 $2 次，已核对的 $ok 份结果全部正确；最后一次在这里用了 $last 毫秒。实验机繁忙时，仿真 CPU 和 rxe 设备可能就这么慢，请再运行一次。如果实验机空闲时仍然超时，说明你的程序在某处等得太久（例如轮询循环里的 sleep）。"
	exit 1
fi
if [ "$LAB_EXIT" != 0 ]; then
	how="exited with status $LAB_EXIT"; zhhow="以状态 $LAB_EXIT 退出"
	if [ "$LAB_TIMED_OUT" = 1 ]; then how="ran out of time"; zhhow="超时"; elif [ -n "$LAB_SIGNAL" ]; then how="was ended by $LAB_SIGNAL"; zhhow="被信号 $LAB_SIGNAL 结束"; fi
	say "Rank $LAB_FAILED_RANK $how first, and the other ranks were stopped; $ok of $total results were checked and right. Its error is in the output above." \
		"rank $LAB_FAILED_RANK 最先出错（$zhhow），其余 rank 随之被停止；$total 份结果中有 $ok 份已核对无误。错误信息见上方输出。"
	exit 1
fi
miss=$(grep -m1 '^missing:' "$rep")
if [ -n "$miss" ]; then
	set -- $miss
	say "Rank $5 stored no result for the vector of $3 floats ($6 $7 $8 $9): call lab_store after each all-reduce." \
		"rank $5 没有为 $3 个浮点数的向量保存结果（$6 $7 $8 $9）：每次 all-reduce 之后都要调用 lab_store。"
	exit 1
fi
if [ -n "$inc" ] || [ "$ok" != "$total" ]; then
	set -- $inc
	say "Only $2 of $4 all-reduces finished on every rank; $ok of $total results were checked." "只有 $4 次 all-reduce 中的 $2 次在所有 rank 上完成；$total 份结果中核对了 $ok 份。"
	exit 1
fi
few=$(grep -m1 '^few packets:' "$rep")
if [ -n "$few" ]; then
	set -- $few
	# few packets: size N step J: sent_pkts P, at least Q
	set -- "$4" "${8%,}" "${11}"
	say "The sums are right, but during the all-reduce of $1 floats the rxe devices sent only $2 packets, fewer than the $3 any all-reduce of that vector over $LAB_SIZE ranks needs: the data did not travel over RDMA." \
		"和是对的，但在 $1 个浮点数的 all-reduce 期间，rxe 设备只发送了 $2 个包，少于任何 all-reduce 在 $LAB_SIZE 个 rank 之间处理该向量所需的 $3 个：数据没有经过 RDMA 传输。"
	exit 1
fi
early=$(grep -c 'done before go' "$rep")
say "All $total results equal the harness's sums, element by element. Measured here (Soft-RoCE in an emulated guest), $LAB_SIZE ranks, median of each size's runs:" \
	"全部 $total 份结果逐元素等于测试框架算出的和。本机实测（仿真客户机中的 Soft-RoCE），$LAB_SIZE 个 rank，每种大小取多次运行的中位数："
# size N: algbw A GB/s busbw B GB/s (median of M runs, US us)
grep '^size .*busbw' "$rep" | while read -r _ n _ alg _ _ bus _ _ _ runs _ us _; do
	n=${n%:}
	say "  yours, $n floats ($((n * 4)) B): busbw $bus GB/s, algbw $alg GB/s, $us us (median of $runs)" "  你的程序，$n 个浮点数（$((n * 4)) B）：busbw $bus GB/s，algbw $alg GB/s，$us us（$runs 次的中位数）"
done
if [ "$early" -gt 0 ]; then
	say "  ($early runs said done before go and were left out of the timing.)" "  （有 $early 次运行在 go 之前就报告完成，未计入计时。）"
fi

# Where the bytes went: the packets each device sent during the run (rank
# r uses rxe(r % 2)). A ring sends as much from every rank; a gather to
# rank 0 sends half of everything from rank 0 alone. Here one CPU copies
# every byte of either, so the times come out close; the split is what a
# wire per rank would feel.
pk=$(awk 'NR == FNR { if ($2 == "sent_pkts") b[$1] = $3; next }
	$2 == "sent_pkts" { d = $3 - b[$1]; all += d; if (d > max) { max = d; dev = $1 }; en = en (en == "" ? "" : ", ") $1 " " d; zh = zh (zh == "" ? "" : "，") $1 " " d }
	END { if (all > 0) printf "%s|%s|%s|%d", en, zh, dev, int(100 * max / all + 0.5) }' "$LAB_COUNTERS_BEFORE" "$LAB_COUNTERS_AFTER" 2>/dev/null)
if [ -n "$pk" ]; then
	IFS='|' read -r pken pkzh pkdev pkpct <<EOF
$pk
EOF
	say "  Packets the devices sent during your run: $pken; the busiest, $pkdev, sent $pkpct % of them (even ranks use rxe0, odd ranks rxe1)." \
		"  运行期间各设备发送的包：$pkzh；最忙的 $pkdev 发送了其中的 $pkpct %（偶数 rank 用 rxe0，奇数 rank 用 rxe1）。"
fi

# Open MPI's MPI_Allreduce over UCX on the same devices, the same ranks
# (rank r on rxe(r % 2)), the largest size. Its failure is reported, not
# judged: the learner's program passed above.
n=$(grep '^size .*busbw' "$rep" | tail -n1 | awk '{print $2}' | tr -d :)
mpirun=$(command -v mpirun || command -v orterun)
inc=/usr/lib/x86_64-linux-gnu/openmpi/include
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
cat >"$d/ar.c" <<'EOF'
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }
int main(int argc, char **argv) {
	int rank, size, n = atoi(argv[1]), reps = 3, bad = 0, i, j;
	double t[3];
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	float *in = malloc(n * sizeof *in), *out = malloc(n * sizeof *out);
	for (i = 0; i < n; i++) in[i] = rank + 1;
	MPI_Allreduce(in, out, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); /* connects, warms up */
	for (j = 0; j < reps; j++) {
		MPI_Barrier(MPI_COMM_WORLD);
		double t0 = MPI_Wtime();
		MPI_Allreduce(in, out, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		t[j] = MPI_Wtime() - t0;
		MPI_Allreduce(MPI_IN_PLACE, &t[j], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	}
	for (i = 0; i < n; i++) bad += out[i] != size * (size + 1) / 2;
	qsort(t, reps, sizeof t[0], cmp);
	if (rank == 0) printf("mpi_allreduce %d %.0f %d\n", n, t[reps / 2] * 1e6, bad), fflush(stdout);
	MPI_Finalize();
	return 0;
}
EOF
# UCX's rc_verbs keeps its bounce buffers in pools it registers (so every
# page is resident): by default a receive pool of 1024 segments of 8 KB
# however short its queue, and a send pool grown 1024 at a time, about
# 17 MB a rank. Segments of 2 KB, short queues and a send pool grown 64
# at a time bring a rank from 23 MB to 8 MB (measured in this guest).
# UCX_IB_RX_QUEUE_LEN also shortens the queue of ud_verbs, which rc_v
# brings along for connecting (its default of 4096 costs 5 MB a rank).
ucx="-x UCX_TLS=rc_v,self -x UCX_IB_GID_INDEX=0 -x UCX_IB_RX_QUEUE_LEN=64 -x UCX_RC_VERBS_SEG_SIZE=2048"
ucx="$ucx -x UCX_RC_VERBS_TX_QUEUE_LEN=64 -x UCX_RC_VERBS_TX_BUFS_GROW=64 -x UCX_LOG_LEVEL=info"
ctx() { echo "-np 1 $ucx -x UCX_NET_DEVICES=rxe$1:1 $d/ar $n"; }
if [ -n "$LAB_DISK_ERROR" ]; then
	say "Open MPI could not run here: $LAB_DISK_ERROR" "Open MPI 无法在这里运行：$LAB_DISK_ERROR"
	exit 0
fi
if [ -z "$n" ] || [ -z "$mpirun" ] || [ ! -f "$inc/mpi.h" ]; then
	say "Open MPI could not run here (no mpirun or mpi.h in this guest): no MPI_Allreduce to compare with." "Open MPI 无法在这里运行（客户机中没有 mpirun 或 mpi.h）：没有可对比的 MPI_Allreduce。"
	exit 0
fi
if ! out=$(tcc -I"$inc" -o "$d/ar" "$d/ar.c" -lmpi 2>&1); then
	say "The MPI comparison did not compile: $(echo "$out" | head -n 2)" "用于对比的 MPI 程序没有编译通过：$(echo "$out" | head -n 2)"
	exit 0
fi
args="$(ctx 0) : $(ctx 1)"
i=2
while [ "$i" -lt "$LAB_SIZE" ]; do
	args="$args : $(ctx $((i % 2)))"
	i=$((i + 1))
done
# Open MPI refuses root unless told twice; the check is root in the guest.
# The guest has 256 MB, its root in RAM: with the pools above and no
# shared-memory BTL, mpirun and four ranks take about 45 MB (8 MB of it
# PMIx's shared key store in /tmp; its private one, gds hash, costs each
# rank 5 MB more). They run in a cgroup of their own, bounded to what is
# available less 32 MB for the kernel and the agent: if Open MPI needs
# more, the kernel ends Open MPI, not the agent, and nothing of it
# outlives the check (cgroup.kill).
# Four ranks share one emulated CPU: idle ranks yield it, and mpirun gets
# what is left of the check's time (check_timeout).
avail=$(awk '/^MemAvailable:/ {print int($2 / 1024)}' /proc/meminfo)
cg=/sys/fs/cgroup/lab-mpi-$$
bound=$((avail - 32))
if grep -qw memory /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null && mkdir "$cg" 2>/dev/null; then
	echo $((bound << 20)) >"$cg/memory.max"
	echo 0 >"$cg/memory.swap.max" 2>/dev/null
	trap 'echo 1 >"$cg/cgroup.kill" 2>/dev/null; for i in 1 2 3 4 5 6 7 8 9 10; do rmdir "$cg" 2>/dev/null && break; sleep 0.2; done; rm -rf "$d"' EXIT
else
	cg=
fi
inside() { if [ -n "$cg" ]; then sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" "$@"; else "$@"; fi; }
ooms=$(dmesg 2>/dev/null | grep -ci 'out of memory')
t0=$(date +%s)
# The check's own deadline for Open MPI, with a margin for the rest of
# this script to end on a loaded guest: with mpirun ended by timeout 10 s
# before the budget, its ranks spun on (mpirun's KILL does not reach
# them) and the script, starved, ran out of the check's time before it
# could say anything (stress-ng beside a learner guest at nice 10).
deadline=$((start + budget - 15))
left=$((deadline - t0))
if [ "$left" -lt 5 ]; then
	say "Open MPI's MPI_Allreduce was not run: only $left s of the check's $budget s were left." "没有运行 Open MPI 的 MPI_Allreduce：检查的 $budget 秒只剩 $left 秒。"
	exit 0
fi
inside env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 TMPDIR="$d" timeout -k 2 "$left" "$mpirun" \
	--mca plm isolated --oversubscribe --mca mpi_yield_when_idle 1 --mca pml ucx --mca btl self --mca pml_base_verbose 10 \
	$args >"$d/out" 2>&1 &
mp=$!
# Rank 0's line is the result: MPI_Finalize (5-8 s of a loaded guest's
# time) is not waited for once it is there. Open MPI's session folder
# (8 MB of PMIx's shared-memory files, on a /tmp in RAM) is in $d
# (TMPDIR), so a run ended here does not leave it behind.
# At the deadline, or with the result there, everything of Open MPI ends
# at once (cgroup.kill): ranks left behind by an ended mpirun would take
# the one emulated CPU from the rest of this script.
while kill -0 "$mp" 2>/dev/null && ! grep -q '^mpi_allreduce ' "$d/out" && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.2; done
if [ -n "$cg" ]; then echo 1 >"$cg/cgroup.kill"; fi
wait "$mp"
st=$?
took=$(($(date +%s) - t0))
killed=0
[ -n "$cg" ] && killed=$(awk '/^oom_kill / {print $2}' "$cg/memory.events" 2>/dev/null)
res=$(grep -m1 '^mpi_allreduce ' "$d/out")
lane=$(grep -o 'rc_verbs/rxe[0-9]*:[0-9]*' "$d/out" | sort -u | tr '\n' ' ' | sed 's/ $//')
if [ -z "$res" ]; then
	# Open MPI's and UCX's own words, without their progress lines.
	err=$(grep -v 'UCX  INFO\|pml_base\|mca: base\|select:\|selected ucx\|^ *$' "$d/out" | head -n 3 | cut -c 1-200 | tr '\n' ' ')
	why= zhwhy=
	oom=$(dmesg 2>/dev/null | grep -io 'out of memory: Killed process [0-9]* ([^)]*)' | tail -n 1)
	if [ "${killed:-0}" -gt 0 ] || [ "$(dmesg 2>/dev/null | grep -ci 'out of memory')" -gt "$ooms" ]; then
		why="the kernel: $oom ($avail MB were available to start with, Open MPI was given $bound MB); "
		zhwhy="内核：$oom（开始时可用 $avail MB，分给 Open MPI 的上限是 $bound MB）；"
	fi
	if [ "$took" -ge "$left" ]; then
		why="it did not finish within the $left s left of the check's $budget s, and was stopped; $why"
		zhwhy="它没能在检查 $budget 秒中剩下的 $left 秒内完成，已被停止；$zhwhy"
	fi
	# Its last words only when nothing better says why.
	[ -n "$why$err" ] || err=$(grep -v 'UCX  INFO' "$d/out" | tail -n 2 | cut -c 1-200 | tr '\n' ' ')
	[ -n "$err" ] || why=${why%; } zhwhy=${zhwhy%；}
	say "Open MPI's MPI_Allreduce over UCX could not run here (mpirun exit $st): $why$err" "Open MPI 的 MPI_Allreduce（走 UCX）没能在这里运行（mpirun 退出状态 $st）：$zhwhy$err"
	exit 0
fi
set -- $res
bus=$(awk -v n="$2" -v us="$3" -v r="$LAB_SIZE" 'BEGIN { a = n * 4 / us / 1e3; printf "%.3g %.3g", a * 2 * (r - 1) / r, a }')
set -- $res $bus
if [ "$4" != 0 ]; then
	say "  Open MPI's MPI_Allreduce returned $4 wrong elements: its figure is not shown." "  Open MPI 的 MPI_Allreduce 返回了 $4 个错误元素：不显示它的数据。"
	exit 0
fi
say "  Open MPI 4 MPI_Allreduce over UCX (${lane:-no rc_verbs lane reported}), $2 floats: busbw $5 GB/s, algbw $6 GB/s, $3 us (median of 3)" \
	"  Open MPI 4 的 MPI_Allreduce，走 UCX（${lane:-未报告 rc_verbs 通道}），$2 个浮点数：busbw $5 GB/s，algbw $6 GB/s，$3 us（3 次的中位数）"
exit 0
