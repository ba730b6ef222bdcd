package vmimage

import (
	"context"
	"errors"
	"testing"
)

// requireImageInputs fails (not skips) when the machine lacks packages: make
// test installs them, so their absence is a real error with a fix command.
func requireImageInputs(t testing.TB) {
	t.Helper()
	if err := Preflight(context.Background(), "/proc/self/exe"); err != nil {
		var me *MissingError
		if errors.As(err, &me) {
			t.Fatalf("this machine cannot build the guest: %v", me)
		}
		t.Fatal(err)
	}
}
