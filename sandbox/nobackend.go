package sandbox

import "context"

// NoBackend is the backend of a need this machine cannot serve: every run
// fails at once with Reason.
type NoBackend struct {
	Reason Text
}

// Name implements Backend.
func (n NoBackend) Name() string { return "none" }

// Lab implements Backend.
func (n NoBackend) Lab(context.Context) Lab {
	return Lab{Backend: "none", State: LabNone, Reason: n.Reason, Devices: []Device{}}
}

// Exec implements Backend.
func (n NoBackend) Exec(context.Context, *Session) error {
	return &Reason{Kind: "unavailable", Text: n.Reason}
}

// Unavailable implements the Unavailable capability.
func (n NoBackend) Unavailable() Text { return n.Reason }
