package web

import (
	"testing"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/store"
)

// TestPhaseProgressIsOneLine: a phase emitted again under the current
// phase's name is its progress (syscalls: "… 50 of 200 round trips"): the
// replay shows one line with the latest text, as the live widget does; a
// phase seen again after another one is a new line.
func TestPhaseProgressIsOneLine(t *testing.T) {
	ph := func(name, en, zh string) sandbox.Event {
		return sandbox.Event{Type: sandbox.EvPhase, Name: name, Message: en, Messages: sandbox.Text{"en": en, "zh": zh}}
	}
	events := []sandbox.Event{
		ph("count-tcp", "Counting: starting", "统计：启动"),
		ph("count-tcp", "Counting: 0 of 200", "统计：0 / 200"),
		ph("count-tcp", "Counting: 200 of 200", "统计：200 / 200"),
		ph("count-send", "RDMA: starting", "RDMA：启动"),
		ph("count-tcp", "again", "又一次"),
	}
	rv := digestRun("zh", store.Run{ID: "r1", Status: "running"}, events)
	var got []string
	for _, p := range rv.Phases {
		got = append(got, p.Name+" "+p.Title)
	}
	want := []string{"count-tcp 统计：200 / 200", "count-send RDMA：启动", "count-tcp 又一次"}
	if len(got) != len(want) {
		t.Fatalf("phases %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("phases %q, want %q", got, want)
		}
	}
	if !rv.Phases[2].Current || rv.Phases[0].Current {
		t.Errorf("the current phase is not the last one: %+v", rv.Phases)
	}
}
