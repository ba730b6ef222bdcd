package zhcheck

import (
	"testing"
)

// The English-prose detector of e2e.TestEveryExperimentReplay.
func TestEnglishProse(t *testing.T) {
	for _, c := range []struct {
		s    string
		want int
	}{
		{"TCP over loopback, 64 KiB writes", 1},
		{"经由回环的 TCP，每次 write 64 KiB", 0},
		{"在 RESET 状态下 post SEND", 0},
		{"已取消 cancelled", 0},
		{"原因：exit status 1", 1},
		{"ibv_reg_mr(1 MiB) → ENOMEM（无法分配内存）", 0},
		{"rxe0 收到的包", 0},
		{"RDMA WRITE", 0},
		{"#12 SEND Only with Invalidate QP 0x000011 PSN 5 · ICRC 正确", 0},
		{"RDMA WRITE Last with Immediate QP 0x000011 PSN 7", 0},
		{"round trip (µs, log)", 1},
		{"Soft-RoCE 实验环境：就绪", 0},
		{"GRH：60 00 00 00 00 1c 11 40 be ae 00 01", 0},
		{"be ae", 1}, // two words, not a dump
		{"the run said be careful", 1},
	} {
		if got := Prose(c.s); len(got) != c.want {
			t.Errorf("%q: %v", c.s, got)
		}
	}
}

// The Western-punctuation and English-label detector of the Chinese pages
// (Leaks): each case of issue 30 item 8 is caught, and what Chinese text
// rightly holds is not.
func TestChineseLeaks(t *testing.T) {
	for _, c := range []struct {
		s    string
		leak bool
	}{
		// leaks seen in the zh pages
		{"打开设备. 等你选择下一步。", true},
		{"…向上游传播. 依据 IEEE 802.1Qbb", true},
		{"范围: 3–5 ms.", true},
		{"时长: 50 分钟", true},
		{"日志 (27)", true},
		{"IBV_EVENT_PORT_ERR (端口 1)", true},
		{"RDMA 19 (0–31) %，TCP 123 (100–262) %", true},
		{"2.0 (0.0–7.7)", true}, // a table cell of figures
		{"链路 veth1, veth0：没有遗留", false},
		{"rxe1 (requester) → rxe0 (responder)", true},
		{"(index 1)", true},
		{"rxe1（请求方）→ rxe0 (responder)", true},
		{"port.active_mtu 1024 bytes，已设置", true},
		{"AckReq：1 (set)", true},
		{"IPv4 映射的 GID (index 1)", true},
		{"对端收到 \"hello from a QP in RTS\"", true},
		{"correct：完成状态 IBV_WC_SUCCESS", true},
		// what Chinese text rightly holds
		{"ibv_reg_mr(1 MiB) → ENOMEM（无法分配内存）", false},
		{"在 /dev/infiniband/uverbsN 上 write()；随后内核构造报文", false},
		{"ECN 为 ECT(0)，DSCP 26", false},
		{"公式 (retry_cnt + 1) × 4.0 ms 给出放弃的时间", false},
		{"用 10.0.0.1:4791 上的 UDP", false},
		{"case=all 时依次运行三种故障", false},
		{"对端回答“receiver not ready (RNR)”", false},
		{"丢包率 0.1 %，RDMA 2.0（0.0–7.7）%", false},
		{"GRH：60 00 00 00 00 1c 11 40 be ae 00 01", false},
		{"运行位置：Soft-RoCE 虚拟机（vm）。", false},
		{"1024 B（每个 WRITE 64 个报文）；timeout 16（268 ms），retry_cnt 7", false},
		{"收到 CNP 时 α ← (1 − g)·α + g", false},
		{"verbs：Post Send、Poll for Completion、完成状态", false},
		{"Mietke 等，Analysis of the Memory Registration Process in the Mellanox InfiniBand Software Stack，Euro-Par 2006", false},
		{"论文《Analysis of the Memory Registration Process》称", false},
		{"时长：50 分钟", false},
		{"ibv_modify_qp(client, RTR)：traffic_class 0x68", false},
		{"回程时的 DSCP 是 0 (10)：它们用的是", true},
	} {
		if got := Leaks(c.s); (len(got) > 0) != c.leak {
			t.Errorf("%q: leaks %q, want a leak: %v", c.s, got, c.leak)
		}
	}
}
