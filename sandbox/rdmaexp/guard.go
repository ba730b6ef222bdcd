package rdmaexp

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"

	"github.com/rdmalab/rdmalab/internal/lineio"
	"github.com/rdmalab/rdmalab/sandbox/agentproc"
)

// A guard is a helper process that puts the machine back as it was when a
// run ends, however it ends: the agent is SIGKILLed with its process group
// on cancel, so deferred clean-up in the run never happens. The guard runs
// in its own group without the parent-death signal, takes its request on
// stdin, says "armed", waits for stdin to close (the run released it, or
// died) and then restores. perf-mtu's MTU guard and nvmeof's clean-up
// guard are two.

// startGuard starts the helper name as a guard, sends it req and waits
// until it says "armed". what names it in errors ("the MTU guard"). The
// reader returned is the guard's stdout after "armed".
func startGuard(name, what string, req any) (*agentproc.Proc, *bufio.Reader, error) {
	spec, err := agentproc.Helper(name)
	if err != nil {
		return nil, nil, err
	}
	spec.Group, spec.Outlive = true, true
	p, err := agentproc.Start(spec)
	if err != nil {
		return nil, nil, fmt.Errorf("start %s: %w", what, err)
	}
	out := bufio.NewReader(p.Stdout())
	if err := p.Send(req); err != nil {
		p.Close()
		return nil, nil, fmt.Errorf("arm %s: %w", what, err)
	}
	line, err := lineio.Read(out, 256)
	if err != nil || string(line) != "armed" {
		p.Close()
		return nil, nil, fmt.Errorf("%s did not arm (%q): %v", what, line, err)
	}
	return p, out, nil
}

// guardRequest reads a guard's request (one JSON line) into v; the guard
// then checks it, says "armed" and waits for EOF on the reader returned.
func guardRequest(in io.Reader, v any) (*bufio.Reader, error) {
	r := bufio.NewReader(in)
	line, err := r.ReadBytes('\n')
	if err != nil {
		return nil, err
	}
	return r, json.Unmarshal(line, v)
}
