package fleet

import (
	"context"
	"sync"

	"github.com/rdmalab/rdmalab/sandbox"
)

// Mix is the backend of one need on a lab with workers: runs go to the
// local backend while it has a free slot, else to the workers. Its slots
// are the local ones plus those of the live workers, so the runner's
// scheduling (timing runs alone, shareable side by side) covers both.
type Mix struct {
	Need   sandbox.Need
	Local  sandbox.Backend // nil or "none": workers only
	Slots0 int             // the local backend's slots
	Fleet  *Server

	mu   sync.Mutex
	busy int
}

// Name implements sandbox.Backend: the local backend's name.
func (m *Mix) Name() string {
	if m.localOK() {
		return m.Local.Name()
	}
	return "workers"
}

func (m *Mix) localOK() bool { return m.Local != nil && m.Local.Name() != "none" }

// Slots implements sandbox.Slotted.
func (m *Mix) Slots() int {
	n := m.Fleet.Slots(m.Need)
	if m.localOK() {
		n += m.Slots0
	}
	return max(n, 1)
}

// Guests implements sandbox.GuestPool for the local backend.
func (m *Mix) Guests() int {
	if g, ok := m.Local.(sandbox.GuestPool); ok {
		return g.Guests()
	}
	return 0
}

// Lab implements sandbox.Backend: the local lab with the workers listed.
func (m *Mix) Lab(ctx context.Context) sandbox.Lab {
	var lab sandbox.Lab
	if m.Local != nil {
		lab = m.Local.Lab(ctx)
	}
	for _, w := range m.Fleet.Workers() {
		lab.Workers = append(lab.Workers, sandbox.WorkerInfo{Name: w.Name, Backend: w.Backend, Accel: w.Accel,
			Devices: deviceNames(w.Devices), Slots: w.Backends[string(m.Need)], Running: w.Running, Load1: w.Load1, CPUs: w.CPUs})
	}
	if !m.localOK() && len(lab.Workers) > 0 {
		lab.State, lab.Reason = sandbox.LabReady, sandbox.Text{"en": "runs go to the workers", "zh": "实验交给其他机器（worker）运行"}
	}
	return lab
}

func deviceNames(ds []sandbox.Device) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Name)
	}
	return out
}

// Exec implements sandbox.Backend.
func (m *Mix) Exec(ctx context.Context, s *sandbox.Session) error {
	m.mu.Lock()
	local := m.localOK() && m.busy < m.Slots0
	if local {
		m.busy++
	}
	m.mu.Unlock()
	if local {
		defer func() {
			m.mu.Lock()
			m.busy--
			m.mu.Unlock()
		}()
		return m.Local.Exec(ctx, s)
	}
	return m.Fleet.Exec(ctx, m.Need, s)
}
