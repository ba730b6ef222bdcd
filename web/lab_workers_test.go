package web

import (
	"context"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/sandbox"
)

// /lab lists the pool's guests and the workers with their backend,
// devices and load, in both languages.
func TestLabPageWorkers(t *testing.T) {
	lab := readyLab
	lab.Guests, lab.GuestsReady = 2, 1
	lab.Workers = []sandbox.WorkerInfo{
		{Name: "rnic-1", Backend: "host", Devices: []string{"mlx5_0"}, Slots: 1, Running: 1, Load1: 0.5, CPUs: 16},
		{Name: "pool-2", Backend: "vm", Accel: "kvm", Devices: []string{"rxe0", "rxe1"}, Slots: 4, CPUs: 8},
	}
	ts := labServer(t, labFunc(func(context.Context) sandbox.Lab { return lab }))
	d := labDoc(t, ts, "en")
	if g := d.Find(`[data-testid=lab-guests]`).Text(); g != "1 / 2" {
		t.Errorf("guests %q, want 1 / 2", g)
	}
	rows := d.Find(`[data-testid=lab-worker]`)
	if rows.Length() != 2 {
		t.Fatalf("%d worker rows, want 2", rows.Length())
	}
	r := d.Find(`[data-testid=lab-worker][data-name=pool-2]`).Text()
	for _, want := range []string{"vm", "kvm", "rxe0, rxe1", "0 / 4", "8 CPU"} {
		if !strings.Contains(r, want) {
			t.Errorf("pool-2 row %q lacks %q", r, want)
		}
	}
	if h := labDoc(t, ts, "zh").Find(`[data-testid=lab-workers]`).Prev().Text(); !strings.Contains(h, "工作机") {
		t.Errorf("zh workers heading %q", h)
	}
}
