package sandbox

import "testing"

func TestReasonText(t *testing.T) {
	for in, want := range map[string]string{
		"RDMA experiments are turned off (--backend none)":                                                           "RDMA 实验已关闭（--backend none）",
		"kernel 6.1.0-57-amd64 has no RDMA devices; the Soft-RoCE guest cannot be built: missing qemu-system-x86_64": "内核 6.1.0-57-amd64 没有 RDMA 设备；无法构建 Soft-RoCE 虚拟机：缺少 qemu-system-x86_64",
		"something new": "something new",
	} {
		if got := ReasonText(in, "zh"); got != want {
			t.Errorf("%q: %q", in, got)
		}
		if got := ReasonText(in, "en"); got != in {
			t.Errorf("en changed %q", in)
		}
	}
}
