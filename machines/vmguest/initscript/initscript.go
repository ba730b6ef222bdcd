// Package initscript writes the lab guest's /init, beside the guest code
// it starts (package vmguest: the agent's server, then PID 1). The image
// builder (package vmimage) puts it in the initramfs; it runs nothing
// itself, so host code may import it.
package initscript

import (
	"strings"

	"github.com/rdmalab/rdmalab/machines/vmproto"
)

// Script is /init, loading modules in that order. Only busybox applets
// and dash builtins: every process start costs tens of milliseconds under
// TCG.
func Script(modules []string) []byte {
	return []byte(`#!/bin/sh
# rdmalab guest init, written by labserver vm build (machines/vmguest/initscript).
export PATH=/usr/sbin:/usr/bin HOME=/root
# The agent first: its Go start-up is the longest step of the boot, and it
# needs nothing mounted until it is over.
/usr/bin/labagent --serve ` + vmproto.PortLink + ` &
agent=$!
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
# /run is root's (tmpfs would make it 1777): the agent keeps root-only
# files there, and a learner's shell must not pre-create them.
mount -t tmpfs -o mode=0755 tmpfs /run
# No systemd here to set what it sets on every distribution: root never
# follows a learner's link or opens a learner's file in a world-writable
# sticky folder (/tmp, /run/lab-peer); no user namespaces for a learner
# (no lesson needs one; Debian's kernel has the switch).
echo 1 > /proc/sys/fs/protected_symlinks
echo 1 > /proc/sys/fs/protected_hardlinks
echo 2 > /proc/sys/fs/protected_regular
echo 2 > /proc/sys/fs/protected_fifos
if [ -e /proc/sys/kernel/unprivileged_userns_clone ]; then
	echo 0 > /proc/sys/kernel/unprivileged_userns_clone
else
	echo 0 > /proc/sys/user/max_user_namespaces
fi
read up _ < /proc/uptime; echo "rdmalab-guest: init at uptime ${up}s"
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
hostname rdmalab-guest
if ! modprobe -a ` + strings.Join(modules, " ") + ` 2>/run/modprobe.err; then
	echo "loading kernel modules failed: $(cat /run/modprobe.err)" > ` + vmproto.SetupErrFile + `
fi
: > ` + vmproto.ModulesDone + `
read up _ < /proc/uptime; echo "rdmalab-guest: modules loaded at uptime ${up}s"
exec /usr/bin/labagent guest-init "$agent"
`)
}
