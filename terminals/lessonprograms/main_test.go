package lessonprograms

import (
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/machines/vm"
	"github.com/rdmalab/rdmalab/machines/vm/vmtest"
)

// The tests boot real learner guests under QEMU (TCG on machines without
// a working KVM) from an image built from this tree (vmtest: skipped
// under -short).

func TestMain(m *testing.M) { vmtest.Main(m) }

// testConfig is a learner guest's configuration for these tests: the
// shared image, logs to the test log, a boot timeout generous enough for
// a loaded machine, and QEMU at the test's own priority (Nice -1), not
// a learner guest's nice 10: what is judged here is the exercises, and a
// guest at nice 10 beside any busy process (stress-ng --cpu 2 in the
// suite's stressed runs) got a tenth of a core, so that right programs
// ran out of their 30 s and checks out of theirs.
func testConfig(t testing.TB) vm.Config {
	return vm.Config{
		Dir:         vmtest.Image(t),
		Agent:       vmtest.Agent(t),
		BootTimeout: 3 * time.Minute, // TCG on 2 shared cores: boots take 5–40 s
		Logger:      vmtest.Logger(t),
		Nice:        -1,
	}
}
