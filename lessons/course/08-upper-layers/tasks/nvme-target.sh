#!/bin/sh
# Setup of task "nvme-rdma" of lesson 08 (`:::task … setup=`): run by the
# lab as root in the learner's own guest each time the terminal is opened
# on the lesson's page, before it takes keystrokes. Lesson code, never
# learner input; idempotent (a reopened terminal runs it again).
#
# It does what the learner's shell (uid 1000) may not: loads the modules
# (null_blk, the target nvmet_rdma, the host nvme_rdma), exports a 1 GiB
# null_blk namespace (stores nothing) through configfs on 10.0.0.1, RDMA
# service id 4421 (rxe0; the nvmeof experiment uses 4420 and its own NQN
# prefix), and grants the learner exactly the right `nvme connect` needs:
# read-write on /dev/nvme-fabrics for group learner (gid 1000). What that
# right does and does not allow: docs/operations.md, "Task setups".
set -e
nqn=nqn.2026-12.lab.rdmalab.task:nvme-rdma
port=2711
cfg=/sys/kernel/config
# The on-demand modules may sit on the guest's read-only on-demand disk
# (images that have one name its serial in /etc/rdmalab/demand-disk):
# mount it as the experiments do (package demanddisk) before modprobe.
if [ -r /etc/rdmalab/demand-disk ] && ! grep -q ' /opt/rdmalab ' /proc/mounts; then
	serial=$(cat /etc/rdmalab/demand-disk)
	modprobe -a virtio_blk squashfs
	dev=""
	n=0
	while [ -z "$dev" ] && [ $n -lt 10 ]; do
		for s in /sys/block/vd*/serial; do
			[ "$(cat "$s" 2>/dev/null)" = "$serial" ] && dev=/dev/${s#/sys/block/} && dev=${dev%/serial}
		done
		[ -n "$dev" ] && [ -e "$dev" ] || { dev=""; n=$((n + 1)); sleep 1; }
	done
	[ -n "$dev" ] || { echo "no on-demand disk with serial $serial"; exit 1; }
	mount -t squashfs -o ro,nodev,nosuid "$dev" /opt/rdmalab
fi
[ -e /dev/nullb0 ] || modprobe null_blk nr_devices=1 gb=1
modprobe nvmet_rdma
modprobe nvme_rdma
[ -d $cfg/nvmet ] || mount -t configfs none $cfg
sub=$cfg/nvmet/subsystems/$nqn
if [ ! -d $sub ]; then
	mkdir $sub
	echo 1 > $sub/attr_allow_any_host
	mkdir $sub/namespaces/1
	printf /dev/nullb0 > $sub/namespaces/1/device_path
	echo 1 > $sub/namespaces/1/enable
fi
p=$cfg/nvmet/ports/$port
if [ ! -d $p ]; then
	mkdir $p
	echo rdma > $p/addr_trtype
	echo ipv4 > $p/addr_adrfam
	echo 10.0.0.1 > $p/addr_traddr
	echo 4421 > $p/addr_trsvcid
fi
# linking the subsystem into the port starts listening
[ -L $p/subsystems/$nqn ] || ln -s $sub $p/subsystems/$nqn
chgrp 1000 /dev/nvme-fabrics
chmod 0660 /dev/nvme-fabrics
echo "target $nqn on rdma 10.0.0.1:4421; /dev/nvme-fabrics 0660 root:learner"
