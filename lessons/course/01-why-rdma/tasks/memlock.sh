#!/bin/sh
# Task "memlock" of lesson 01: the learner raised the locked-memory limit
# (RLIMIT_MEMLOCK) of their terminal's shell to at least 64 MiB.
#
# Read from the kernel's own record, /proc/PID/limits, of every process of
# the learner's terminal (LAB_TERM_PIDS, set by the lab): what `ulimit -l`
# prints is this soft limit in KiB. The guest boots with 8 MiB (8192 KiB).
# Messages follow LAB_LANG (zh or en).

want=$((64 * 1024 * 1024))
say() { if [ "$LAB_LANG" = zh ]; then printf '%s\n' "$2"; else printf '%s\n' "$1"; fi; }

if [ -z "$LAB_TERM_PIDS" ]; then
	say "No shell is open in your terminal." "你的终端里没有打开的 shell。"
	exit 2
fi
best=0
for pid in $LAB_TERM_PIDS; do
	# "Max locked memory  <soft>  <hard>  bytes"
	soft=$(awk '/^Max locked memory/ { print $4 }' "/proc/$pid/limits" 2>/dev/null)
	[ -n "$soft" ] || continue
	if [ "$soft" = unlimited ]; then
		say "Your shell's locked-memory limit is unlimited (at least 64 MiB)." "你的 shell 的锁定内存上限是 unlimited（不低于 64 MiB）。"
		exit 0
	fi
	[ "$soft" -gt "$best" ] && best=$soft
done
if [ "$best" -ge "$want" ]; then
	say "Your shell's locked-memory limit is $((best / 1024)) KiB (at least 65536 KiB = 64 MiB)." \
		"你的 shell 的锁定内存上限是 $((best / 1024)) KiB（不低于 65536 KiB = 64 MiB）。"
	exit 0
fi
say "Your shell's locked-memory limit is still $((best / 1024)) KiB; the task asks for at least 65536 KiB (64 MiB). Run ulimit -l 65536 in the terminal's shell itself (not in a script or a subshell), then ulimit -l to see it." \
	"你的 shell 的锁定内存上限仍是 $((best / 1024)) KiB，任务要求至少 65536 KiB（64 MiB）。请直接在终端的 shell 里运行 ulimit -l 65536（不要放在脚本或子 shell 里），再用 ulimit -l 查看。"
exit 1
