package vm

import (
	"log/slog"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/machines/vm/vmtest"
)

// The integration tests boot real guests under QEMU (TCG on machines
// without a working KVM) from an image built from this tree (vmtest).

func TestMain(m *testing.M) { vmtest.Main(m) }

func labserver(t testing.TB) string { return vmtest.Labserver(t) }
func labagent(t testing.TB) string  { return vmtest.Agent(t) }
func testImage(t testing.TB) string { return vmtest.Image(t) }
func round3(xs []float64) []float64 { return vmtest.Round3(xs) }
func median(xs []float64) float64   { return vmtest.Median(xs) }

// testConfig is a guest configuration for tests: the shared image, logs
// to the test log, a boot timeout generous enough for a loaded machine.
func testConfig(t testing.TB) Config {
	return Config{
		Dir:         testImage(t),
		Agent:       labagent(t),
		BootTimeout: 3 * time.Minute, // TCG on 2 shared cores: boots take 5–40 s
		Logger:      vmtest.Logger(t),
	}
}

type testWriter = vmtest.Writer

func newTestLogger(t testing.TB) *slog.Logger { return vmtest.Logger(t) }
