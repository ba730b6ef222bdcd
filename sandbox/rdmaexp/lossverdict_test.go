package rdmaexp

import (
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/zhcheck"
)

// TestLossVerdictOverHundred (no guest): goodput above the loss-free run
// is explained, never left to read as loss helping (issue 44 item 7:
// TCP "kept its goodput" at 125 %).
func TestLossVerdictOverHundred(t *testing.T) {
	rs, ts := floatSpreadOf([]float64{40, 42, 45}), floatSpreadOf([]float64{3, 4, 5})
	over, _, _ := lossVerdict("1", 10, 10, rs, ts, floatSpreadOf([]float64{60, 70, 80}), floatSpreadOf([]float64{122, 125, 131}))
	under, _, _ := lossVerdict("1", 10, 10, rs, ts, floatSpreadOf([]float64{60, 70, 80}), floatSpreadOf([]float64{85, 90, 95}))
	if !strings.Contains(over["en"], "Above 100 % is not loss helping") || !strings.Contains(over["zh"], "高于 100 %") {
		t.Errorf("TCP at 125 %%: %q", over["en"])
	}
	if strings.Contains(under["en"], "Above 100 %") {
		t.Errorf("explained although no median is over 100 %%: %q", under["en"])
	}
	if p := zhcheck.Prose(over["zh"]); len(p) > 0 {
		t.Errorf("zh verdict has English prose %q", p)
	}
}
