package agentproc

import (
	"fmt"
	"os"
	"strings"

	"github.com/rdmalab/rdmalab/sandbox"
)

// Helper is the spec of the experiment helper name: this binary
// re-executed with the same arguments and sandbox.EnvHelper=name. The
// child stays in the agent's process group, so killing the run's group
// kills it too. An entry point that can host an agent (`labserver agent`,
// a test binary's TestMain) must let sandbox.ServeAgent (or
// sandbox.RunHelper) see EnvHelper before doing anything else.
func Helper(name string) (Spec, error) {
	exe, err := os.Executable()
	if err != nil {
		return Spec{}, fmt.Errorf("find the agent binary: %w", err)
	}
	env := make([]string, 0, len(os.Environ())+1)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, sandbox.EnvHelper+"=") {
			env = append(env, kv)
		}
	}
	return Spec{Argv: append([]string{exe}, os.Args[1:]...), Env: append(env, sandbox.EnvHelper+"="+name)}, nil
}
