package vmimage

import (
	"os/exec"
	"slices"
	"strings"
)

// MissingError says what this machine lacks to run the Soft-RoCE guest and
// which Debian packages provide it, so the message ends in the fix command.
type MissingError struct {
	What     string   // what is missing, for humans
	Packages []string // Debian packages that provide it
}

func (e *MissingError) Error() string {
	return "missing " + e.What + "; fix: " + e.Fix()
}

// Fix is the command that installs what is missing.
func (e *MissingError) Fix() string {
	return "apt-get install -y " + strings.Join(e.Packages, " ")
}

// merge folds several MissingErrors into one line with one fix command.
func mergeMissing(errs []*MissingError) *MissingError {
	if len(errs) == 0 {
		return nil
	}
	var what, pkgs []string
	for _, e := range errs {
		what = append(what, e.What)
		for _, p := range e.Packages {
			if !slices.Contains(pkgs, p) {
				pkgs = append(pkgs, p)
			}
		}
	}
	return &MissingError{What: strings.Join(what, ", "), Packages: pkgs}
}

// programPackage names the Debian package of each program the guest needs.
var programPackage = map[string]string{
	"qemu-system-x86_64": "qemu-system-x86",
	"busybox":            "busybox-static",
	"dash":               "dash",
	"ldd":                "libc-bin",
	"xz":                 "xz-utils",
	"modprobe":           "kmod",
	"depmod":             "kmod",
	"ip":                 "iproute2",
	"rdma":               "iproute2",
	"tc":                 "iproute2",
	"ibv_devices":        "ibverbs-utils",
	"ibv_devinfo":        "ibverbs-utils",
	"ibv_rc_pingpong":    "ibverbs-utils",
	"ib_write_lat":       "perftest",
	"ib_send_lat":        "perftest",
	"ib_read_lat":        "perftest",
	"ib_write_bw":        "perftest",
	"ib_send_bw":         "perftest",
	"ib_read_bw":         "perftest",
	"qperf":              "qperf",
	"tcpdump":            "tcpdump",
	"nvme":               "nvme-cli",
	"strace":             "strace",
	"rping":              "rdmacm-utils",
	"capsh":              "libcap2-bin",
	"setpriv":            "util-linux",
	"prlimit":            "util-linux",
}

// CheckQEMU finds the QEMU binary or says how to install it.
func CheckQEMU(qemu string) (string, error) {
	p, err := exec.LookPath(qemu)
	if err != nil {
		return "", &MissingError{What: qemu, Packages: []string{"qemu-system-x86"}}
	}
	return p, nil
}
