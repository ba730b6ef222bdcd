package vm

import (
	"errors"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/zhcheck"
	"github.com/rdmalab/rdmalab/machines/vmimage"
	"github.com/rdmalab/rdmalab/sandbox"
)

// The guest supervisor's reasons read in Chinese on a zh page: the booting
// line (issue 23 saw "booting kernel … with TCG" there in English) and a
// failed boot, the system's own error left as it is.
func TestBootReasonsInChinese(t *testing.T) {
	diag := "qemu exited: exit status 1"
	for _, c := range []struct {
		t    sandbox.Text
		diag string
	}{
		{bootingText("6.1.0-56-amd64", AccelTCG, nil), ""},
		{bootingText("6.1.0-56-amd64", AccelKVM, sandbox.Text{"en": "the snapshot did not restore", "zh": "快照没能恢复"}), ""},
		{bootingText("6.1.0-56-amd64", AccelTCG, sandbox.Detail("KVM boot failed", "KVM 启动失败", diag)), diag},
		{failedBoot(errors.New(diag)), diag},
		{failedBoot(&vmimage.MissingError{What: "the rxe verbs provider (librxe-rdmav*.so)", Packages: []string{"ibverbs-providers"}}), ""},
	} {
		zh := strings.ReplaceAll(c.t.Get("zh"), c.diag, "")
		if c.t["zh"] == "" || c.t["en"] == "" || len(zhcheck.Prose(zh)) > 0 {
			t.Errorf("%q: English prose in Chinese %q", c.t, zhcheck.Prose(zh))
		}
	}
	if got := bootingText("6.1.0-56-amd64", AccelTCG, nil)["en"]; got != "booting kernel 6.1.0-56-amd64 with TCG" {
		t.Errorf("English booting line %q", got)
	}
}
