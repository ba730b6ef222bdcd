package terminal

import (
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/machines/vm"
	"github.com/rdmalab/rdmalab/machines/vm/vmtest"
)

// The tests with guests boot real learner guests under QEMU (TCG on
// machines without a working KVM) from an image built from this tree
// (vmtest: skipped under -short).

func TestMain(m *testing.M) { vmtest.Main(m) }

func labagent(t testing.TB) string  { return vmtest.Agent(t) }
func round3(xs []float64) []float64 { return vmtest.Round3(xs) }
func median(xs []float64) float64   { return vmtest.Median(xs) }

type testWriter = vmtest.Writer

// testConfig is a guest configuration for tests: the shared image, logs
// to the test log, a boot timeout generous enough for a loaded machine.
func testConfig(t testing.TB) vm.Config {
	return vm.Config{
		Dir:         vmtest.Image(t),
		Agent:       labagent(t),
		BootTimeout: 3 * time.Minute, // TCG on 2 shared cores: boots take 5–40 s
		Logger:      vmtest.Logger(t),
	}
}
