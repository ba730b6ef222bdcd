package sandbox

import (
	"context"
	"io"
)

// InProcess is the test double of a backend: it runs the real agent code
// (ServeAgent on one side, AgentReader on the other) over in-memory pipes
// in this process, without starting a child. Tests of the runner and the
// web layer use it; the child process itself is package agentproc's.
type InProcess struct {
	Registry *Registry
}

// Name implements Backend.
func (b InProcess) Name() string { return "host" }

// Lab implements Backend.
func (b InProcess) Lab(context.Context) Lab { return Lab{Backend: "host", State: LabReady} }

// Exec implements Backend.
func (b InProcess) Exec(ctx context.Context, s *Session) error {
	line, err := s.Line()
	if err != nil {
		return err
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() {
		outW.CloseWithError(ServeAgent(ctx, b.Registry, inR, outW))
	}()
	// an interactive run's commands follow the request on stdin
	defer FeedCommands(ctx, inW, line, s.Commands)()
	err = NewAgentReader(outR, 0).ReadRun(s.Emit)
	outR.Close()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
