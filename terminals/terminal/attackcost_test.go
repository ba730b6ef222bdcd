package terminal

import (
	"log/slog"
	"testing"

	"github.com/rdmalab/rdmalab/internal/attackcost"
	"github.com/rdmalab/rdmalab/machines/vm/vmtest"
)

// countedLogger is vmtest.Logger with the bytes it writes counted, for
// attackcost: the log the terminals (in-process here, in labserver in a
// lab) write through an attack.
func countedLogger(t testing.TB) (*slog.Logger, *attackcost.LogCounter) {
	c := &attackcost.LogCounter{W: vmtest.Writer{T: t}}
	return slog.New(slog.NewTextHandler(c, &slog.HandlerOptions{Level: slog.LevelInfo})), c
}
