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
mount -t tmpfs tmpfs /run
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
