package choose

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/zhcheck"
	"github.com/rdmalab/rdmalab/machines/vmimage"
	"github.com/rdmalab/rdmalab/sandbox"
)

// probes are fakes of the machine's answers: devices on this kernel,
// whether rdma_rxe could be loaded, whether setting it up works, whether
// the guest can be built.
type probes struct {
	devices  []sandbox.Device
	loadable error
	setup    error
	vmReady  error
	setUp    bool
}

func (p *probes) opts(mode string, setup bool) Options {
	return Options{
		Mode: mode, SetupSoftRoCE: setup,
		HostDevices: func() ([]sandbox.Device, error) { return p.devices, nil },
		RxeLoadable: func(context.Context) error { return p.loadable },
		SetupHost: func(context.Context) error {
			if p.setup == nil {
				p.setUp = true
			}
			return p.setup
		},
		VMReady: func(context.Context, string) error { return p.vmReady },
	}
}

var noRxe = errors.New("kernel 6.18 has no rdma_rxe module")

func TestDecide(t *testing.T) {
	missingQEMU := &vmimage.MissingError{What: "qemu-system-x86_64", Packages: []string{"qemu-system-x86"}}
	for _, c := range []struct {
		name     string
		p        probes
		mode     string
		setup    bool
		want     string
		inReason string
		fix      string
		setUp    bool
	}{
		{"host devices win", probes{devices: []sandbox.Device{{Name: "mlx5_0"}}}, Auto, false, Host, "mlx5_0", "", false},
		{"soft-roce on the host when allowed", probes{}, Auto, true, Host, "--setup-softroce", "", true},
		{"no setup without the flag", probes{}, Auto, false, VM, "no RDMA devices", "", false},
		{"rxe not loadable: vm", probes{loadable: noRxe}, Auto, true, VM, "no rdma_rxe", "", false},
		{"setup fails: vm", probes{setup: errors.New("EPERM")}, Auto, true, VM, "EPERM", "", false},
		{"nothing works: none with the fix", probes{vmReady: missingQEMU}, Auto, false, None, "missing qemu-system-x86_64", "apt-get install -y qemu-system-x86", false},
		{"host asked, none there", probes{}, Host, false, None, "no RDMA devices", "--setup-softroce", false},
		{"vm asked even with devices", probes{devices: []sandbox.Device{{Name: "rxe0"}}}, VM, false, VM, "guest", "", false},
		{"guest image broken: none", probes{vmReady: errors.New("EIO")}, Auto, false, None, "cannot be built: EIO", "", false},
		{"none asked", probes{devices: []sandbox.Device{{Name: "rxe0"}}}, None, false, None, "turned off", "--backend auto", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := c.p
			d, err := Decide(context.Background(), p.opts(c.mode, c.setup))
			if err != nil {
				t.Fatal(err)
			}
			if d.Backend != c.want || !strings.Contains(d.Reason.Get("en"), c.inReason) || !strings.Contains(d.Fix.Get("en"), c.fix) {
				t.Errorf("got %+v, want %s with reason containing %q, fix containing %q", d, c.want, c.inReason, c.fix)
			}
			// What an admin reads on a zh page: Chinese, with only the
			// system's own error (the probe's) left as it is.
			why := d.Why()
			if zh := strings.ReplaceAll(why.Get("zh"), noRxe.Error(), ""); why["zh"] == "" || len(zhcheck.Prose(zh)) > 0 {
				t.Errorf("reason in Chinese %q: English prose %q", why["zh"], zhcheck.Prose(zh))
			}
			if d.SetUp != c.setUp || p.setUp != c.setUp {
				t.Errorf("set up: decision %v, probe %v; want %v", d.SetUp, p.setUp, c.setUp)
			}
		})
	}
}

func TestDecideBadMode(t *testing.T) {
	p := probes{}
	if _, err := Decide(context.Background(), p.opts("cloud", false)); err == nil {
		t.Fatal("unknown --backend accepted")
	}
}

// TestDecideThisMachine runs the real probes: on this kind of machine
// (no RDMA in the host kernel, QEMU and a Debian kernel installed) the
// answer is vm; elsewhere it must still be a well-formed decision.
func TestDecideThisMachine(t *testing.T) {
	d, err := Decide(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(d)
	switch d.Backend {
	case Host, VM:
	case None:
		if d.Fix == nil && !strings.Contains(d.Reason.Get("en"), "cannot") {
			t.Errorf("none without a fix or reason: %+v", d)
		}
	default:
		t.Errorf("backend %q", d.Backend)
	}
}
