package vmproto

// The layout of the guest image: what the image builder (package vmimage)
// writes, the host's QEMU command line (package vm) names and the guest's
// init (package vmguest/initscript) and agent (package vmguest) expect.

// PortName is the virtio-serial port that carries the agent protocol.
const PortName = "org.rdmalab.agent"

// ModuleList lists the modules' guest paths in load order; the guest
// init loads them with finit_module.
const ModuleList = "etc/rdmalab/modules"

// LateModuleList lists the modules loaded after the agent is ready.
const LateModuleList = "etc/rdmalab/modules.late"

// SetupErrFile carries a Soft-RoCE setup failure to the agent's hello, so
// the host fails fast with the reason instead of timing out.
const SetupErrFile = "/run/rdmalab-setup-error"

// ModulesDone is written by /init once the boot modules are loaded.
const ModulesDone = "/run/rdmalab-modules-loaded"

// ShellParam on the kernel command line asks init for a root shell on the
// serial console (labserver vm shell).
const ShellParam = "rdmalab.shell=1"

// PortLink is where the agent links its virtio-serial port once the guest
// is set up (the path udev would create; there is no udev).
const PortLink = "/dev/virtio-ports/" + PortName

// The on-demand disk (vmimage/disk.go): a read-only squashfs that QEMU
// attaches as a virtio-blk disk with this serial number; the guest mounts
// it at DemandMount when an experiment first needs it (package
// demanddisk). DemandDiskInfo is in images that have one and holds the
// serial.
const (
	DemandDiskSerial = "rdmalab-demand"
	DemandMount      = "/opt/rdmalab"
	DemandDiskInfo   = "etc/rdmalab/demand-disk"
)
