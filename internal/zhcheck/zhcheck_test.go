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
