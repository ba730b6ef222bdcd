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

// String is the lab state in one line for humans, in English (logs, the
// terminal), e.g.
// "Soft-RoCE lab: ready (rxe0, rxe1 on veth, kernel 6.1.0-56-amd64, TCG)".
func (l Lab) String() string { return l.Status().Get("en") }

// Status is the lab state in one line in both languages: the one wording of
// the log, the terminal, /api/lab's status_text and the /lab page.
func (l Lab) Status() Text {
	title := Text{"en": "Soft-RoCE lab", "zh": "Soft-RoCE 实验环境"}
	if l.Backend == "host" {
		title = Text{"en": "RDMA lab (this host)", "zh": "RDMA 实验环境（本机）"}
	}
	reason := Text{"en": firstLine(l.Reason.Get("en")), "zh": firstLine(l.Reason.Get("zh"))}
	switch l.State {
	case LabReady:
		var en, zh []string
		if d := devicesPhrase(l.Devices); d != "" {
			en = append(en, d)
			zh = append(zh, devicesPhraseZh(l.Devices))
		}
		if l.Kernel != "" {
			en = append(en, "kernel "+l.Kernel)
			zh = append(zh, "内核 "+l.Kernel)
		}
		if l.Accel != "" {
			en = append(en, strings.ToUpper(l.Accel))
			zh = append(zh, strings.ToUpper(l.Accel))
		}
		s := Text{"en": title["en"] + ": ready", "zh": title["zh"] + "：就绪"}
		if len(en) > 0 {
			s["en"] += " (" + strings.Join(en, ", ") + ")"
			s["zh"] += "（" + strings.Join(zh, "，") + "）"
		}
		if reason["en"] != "" {
			s["en"] += " — " + reason["en"]
			s["zh"] += "——" + reason["zh"]
		}
		return s
	case LabBooting:
		return Text{"en": title["en"] + ": booting… (" + reason["en"] + ")", "zh": title["zh"] + "：启动中…（" + reason["zh"] + "）"}
	case "":
		return Text{"en": title["en"] + ": unknown", "zh": title["zh"] + "：状态未知"}
	case LabFailed:
		return Text{"en": title["en"] + ": failed — " + l.Reason.Get("en"), "zh": title["zh"] + "：失败——" + l.Reason.Get("zh")}
	case LabNone:
		return Text{"en": title["en"] + ": none — " + l.Reason.Get("en"), "zh": title["zh"] + "：不可用——" + l.Reason.Get("zh")}
	default:
		return Same(title["en"] + ": " + string(l.State) + " — " + l.Reason.Get("en"))
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

// devicesPhraseZh is devicesPhrase in Chinese: "rxe0 → veth0，rxe1 → veth1".
func devicesPhraseZh(devs []Device) string {
	out := make([]string, len(devs))
	for i, d := range devs {
		out[i] = d.Name
		if d.Netdev != "" {
			out[i] += " → " + d.Netdev
		}
	}
	return strings.Join(out, "，")
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
