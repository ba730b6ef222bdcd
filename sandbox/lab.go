package sandbox

import (
	"fmt"
	"sort"
	"strings"
)

// LabState is the state of a backend's lab.
type LabState string

// Lab states: a guest boots, is ready or failed; a server without an RDMA
// backend has none.
const (
	LabBooting LabState = "booting"
	LabReady   LabState = "ready"
	LabFailed  LabState = "failed"
	LabNone    LabState = "none"
)

// String is the lab state in one line for humans, e.g.
// "Soft-RoCE lab: ready (rxe0, rxe1 on veth, kernel 6.1.0-56-amd64, TCG)".
func (l Lab) String() string {
	title := "Soft-RoCE lab"
	if l.Backend == "host" {
		title = "RDMA lab (this host)"
	}
	switch l.State {
	case LabReady:
		var parts []string
		if d := devicesPhrase(l.Devices); d != "" {
			parts = append(parts, d)
		}
		if l.Kernel != "" {
			parts = append(parts, "kernel "+l.Kernel)
		}
		if l.Accel != "" {
			parts = append(parts, strings.ToUpper(l.Accel))
		}
		s := title + ": ready"
		if len(parts) > 0 {
			s += " (" + strings.Join(parts, ", ") + ")"
		}
		if l.Reason != "" {
			s += " — " + firstLine(l.Reason)
		}
		return s
	case LabBooting:
		return title + ": booting… (" + firstLine(l.Reason) + ")"
	case "":
		return title + ": unknown"
	default:
		return title + ": " + string(l.State) + " — " + l.Reason
	}
}

// devicesPhrase is "rxe0, rxe1 on veth" when the netdevs differ only in a
// trailing number, else "rxe0 on eth0, mlx5_0 on ib0".
func devicesPhrase(devs []Device) string {
	if len(devs) == 0 {
		return ""
	}
	names := make([]string, len(devs))
	stems := map[string]bool{}
	for i, d := range devs {
		names[i] = d.Name
		stems[strings.TrimRight(d.Netdev, "0123456789")] = true
	}
	if len(stems) == 1 {
		for s := range stems {
			if s != "" {
				return strings.Join(names, ", ") + " on " + s
			}
		}
		return strings.Join(names, ", ")
	}
	for i, d := range devs {
		names[i] = d.Name + " on " + d.Netdev
	}
	return strings.Join(names, ", ")
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// DeviceTable is the devices with their GIDs and non-zero counters, for
// the terminal.
func DeviceTable(devs []Device) string {
	var b strings.Builder
	for _, d := range devs {
		fmt.Fprintf(&b, "  %-8s netdev %-8s gid[%d] %s\n", d.Name, d.Netdev, d.GIDIndex, d.GID)
		keys := make([]string, 0, len(d.Counters))
		for k, v := range d.Counters {
			if v != 0 {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		if len(keys) == 0 {
			fmt.Fprintf(&b, "           counters: all %d are zero\n", len(d.Counters))
			continue
		}
		for _, k := range keys {
			fmt.Fprintf(&b, "           %-24s %d\n", k, d.Counters[k])
		}
	}
	return b.String()
}
