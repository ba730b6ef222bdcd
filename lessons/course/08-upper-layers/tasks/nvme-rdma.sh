#!/bin/sh
# Task "nvme-rdma" of lesson 08: the learner connected the lesson's NVMe-oF
# namespace over RDMA from their terminal (nvme connect -t rdma …) and
# looked at it with nvme list -v.
#
# Read from the kernel's view, not from anything printed: a controller in
# /sys/class/nvme whose subsysnqn is the task's subsystem and whose
# transport is rdma. The target is exported by the task's setup
# (nvme-target.sh) when the terminal opens. Messages follow LAB_LANG.

nqn=nqn.2026-12.lab.rdmalab.task:nvme-rdma
sys=${SYSFS:-/sys}   # SYSFS: for lessons' script test
say() { if [ "$LAB_LANG" = zh ]; then printf '%s\n' "$2"; else printf '%s\n' "$1"; fi; }

other=""
for c in "$sys"/class/nvme/nvme*; do
	[ -r "$c/subsysnqn" ] || continue
	[ "$(cat "$c/subsysnqn")" = "$nqn" ] || continue
	tr=$(cat "$c/transport" 2>/dev/null)
	if [ "$tr" = rdma ]; then
		name=${c##*/}
		say "The kernel shows controller $name of $nqn with transport rdma ($(cat "$c/address" 2>/dev/null)), state $(cat "$c/state" 2>/dev/null)." \
			"内核显示 $nqn 的控制器 $name，传输为 rdma（$(cat "$c/address" 2>/dev/null)），状态为 $(cat "$c/state" 2>/dev/null)。"
		exit 0
	fi
	other=$tr
done
if [ -n "$other" ]; then
	say "A controller of $nqn is connected, but over $other, not rdma." \
		"$nqn 的控制器已连接，但传输是 $other，不是 rdma。"
	exit 1
fi
if [ ! -d "$sys/kernel/config/nvmet/subsystems/$nqn" ]; then
	say "The lesson's target is not exported in your machine: close the terminal and open it again on this page (the lab prepares the target when it opens), then connect." \
		"你的虚拟机里还没有导出本课的目标端：关掉终端，再在本页重新打开（打开时实验室会准备好目标端），然后再连接。"
	exit 1
fi
say "No controller of $nqn is connected yet. In the terminal: nvme connect -t rdma -a 10.0.0.1 -s 4421 -n $nqn, then nvme list -v." \
	"还没有连接 $nqn 的控制器。在终端里运行：nvme connect -t rdma -a 10.0.0.1 -s 4421 -n $nqn，再运行 nvme list -v。"
exit 1
