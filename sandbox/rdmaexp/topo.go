package rdmaexp

import (
	"errors"
	"fmt"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
)

// side is one end of a connection: an RDMA device, its IPv4-mapped GID and
// the IPv4 address behind it (where the out-of-band TCP exchange goes).
type side struct {
	Dev string         `json:"dev"`
	GID verbs.GIDEntry `json:"gid"`
}

// IP is the side's IPv4 address, read from its GID.
func (s side) IP() string { return s.GID.GID.IP().String() }

// topology says which devices stand for the two hosts.
type topology struct {
	Server, Client side
}

// Wire reports whether the two ends are different devices (rxe1 → rxe0 over
// the veth pair) rather than one device looping back.
func (t topology) Wire() bool { return t.Server.Dev != t.Client.Dev }

func (t topology) describe() sandbox.Text {
	if t.Wire() {
		return say(fmt.Sprintf("client on %s (%s) → server on %s (%s): two Soft-RoCE devices on the two ends of a veth pair stand for two hosts",
			t.Client.Dev, t.Client.IP(), t.Server.Dev, t.Server.IP()),
			fmt.Sprintf("客户端在 %s（%s）→ 服务端在 %s（%s）：veth 两端的两个 Soft-RoCE 设备代表两台主机",
				t.Client.Dev, t.Client.IP(), t.Server.Dev, t.Server.IP()))
	}
	return say(fmt.Sprintf("both ends on %s (%s): the device loops the packets back to itself", t.Server.Dev, t.Server.IP()),
		fmt.Sprintf("两端都在 %s（%s）上：设备把报文环回给自己", t.Server.Dev, t.Server.IP()))
}

// errNoDevice explains what is missing; the runner normally sends RDMA
// experiments to a backend that has devices, so this is a misrouted run.
var errNoDevice = errors.New("no RDMA device with an IPv4 address on this machine: the RDMA experiments need Soft-RoCE (rdma_rxe) — the lab runs them in its guest; on a host, `rdma link add rxe0 type rxe netdev <if>` creates one")

// pickTopology prefers rxe0 as the server and rxe1 as the client (the
// guest's two "hosts"), else any two devices, else one device for both.
func pickTopology() (topology, error) {
	if !verbs.Supported {
		return topology{}, verbs.ErrNoVerbs
	}
	if err := verbs.Load(); err != nil {
		return topology{}, err
	}
	var sides []side
	byName := map[string]side{}
	for _, d := range verbs.DeviceNames() {
		g, err := verbs.IPv4GID(d, 1)
		if err != nil {
			continue
		}
		s := side{Dev: d, GID: g}
		sides = append(sides, s)
		byName[d] = s
	}
	if len(sides) == 0 {
		return topology{}, errNoDevice
	}
	srv, ok0 := byName["rxe0"]
	cli, ok1 := byName["rxe1"]
	switch {
	case ok0 && ok1:
		return topology{Server: srv, Client: cli}, nil
	case len(sides) >= 2:
		return topology{Server: sides[0], Client: sides[1]}, nil
	}
	return topology{Server: sides[0], Client: sides[0]}, nil
}
