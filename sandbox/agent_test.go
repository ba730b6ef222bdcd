package sandbox_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/sandboxtest"
)

// agentEvents splits an agent's output into its events and its end line,
// which must be the last.
func agentEvents(t *testing.T, out string) ([]sandbox.Event, sandbox.End) {
	t.Helper()
	var evs []sandbox.Event
	var end *sandbox.End
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if end != nil {
			t.Fatalf("line %q after the end line", sc.Text())
		}
		var f sandbox.Frame
		if err := json.Unmarshal(sc.Bytes(), &f); err == nil && f.End != nil {
			end = f.End
			continue
		}
		var e sandbox.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		evs = append(evs, e)
	}
	if end == nil {
		t.Fatalf("no end line in %q", out)
	}
	return evs, *end
}

func TestServeAgentValidatesAgain(t *testing.T) {
	var out strings.Builder
	in := strings.NewReader(`{"run_id":"r","experiment":"echo","params":{"n":1000}}` + "\n")
	err := sandbox.ServeAgent(context.Background(), sandboxtest.Registry(), in, &out)
	var af *sandbox.AgentFailure
	if !errors.As(err, &af) {
		t.Fatalf("err %v, want AgentFailure", err)
	}
	evs, end := agentEvents(t, out.String())
	if len(evs) != 1 || evs[0].Type != sandbox.EvError || !strings.Contains(evs[0].Message, `param "n": must be between 1 and 100`) ||
		end.Kind != sandbox.EndFailed {
		t.Errorf("events %+v, end %+v", evs, end)
	}
}

func TestServeAgentReadsOneRequestPerCall(t *testing.T) {
	// Two requests on one stream, as the guest sees them: each call handles
	// exactly one and leaves the next in place.
	in := strings.NewReader(`{"run_id":"a","experiment":"echo","params":{"n":1}}` + "\n\n" +
		`{"run_id":"b","experiment":"echo","params":{"n":2}}` + "\n")
	r := io.Reader(struct{ io.Reader }{in}) // hide ByteReader: exercise the unbuffered path
	for i, n := range []int{1, 2} {
		var out strings.Builder
		if err := sandbox.ServeAgent(context.Background(), sandboxtest.Registry(), r, &out); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		evs, end := agentEvents(t, out.String())
		if len(evs) != n+1 || end != (sandbox.End{}) {
			t.Errorf("request %d: %+v, end %+v", i, evs, end)
		}
	}
	if err := sandbox.ServeAgent(context.Background(), sandboxtest.Registry(), r, io.Discard); !errors.Is(err, io.EOF) {
		t.Errorf("after the last request: %v, want EOF", err)
	}
}

func TestAgentReaderProtocolErrors(t *testing.T) {
	cases := map[string]string{
		"garbage":   "{\"type\":\"log\",\"message\":\"ok\"}\nhello\n",
		"early end": "{\"type\":\"log\",\"message\":\"ok\"}\n",
		"long line": `{"type":"log","message":"` + strings.Repeat("x", 2000) + "\"}\n",
		"no type":   "{\"message\":\"x\"}\n",
		"bad end":   "{\"end\":{\"kind\":\"busy\"}}\n",
	}
	for name, stream := range cases {
		t.Run(name, func(t *testing.T) {
			var got []sandbox.Event
			err := sandbox.NewAgentReader(strings.NewReader(stream), 1000).ReadRun(func(e sandbox.Event) { got = append(got, e) })
			var pe *sandbox.ProtocolError
			if !errors.As(err, &pe) {
				t.Fatalf("err %v, want ProtocolError", err)
			}
		})
	}
}

func TestServeAgentSkipsGenericErrorWhenReported(t *testing.T) {
	// An experiment that explained its failure itself must not be followed
	// by the agent's generic error event; one that did not still gets it.
	reg := sandbox.NewRegistry()
	for _, reported := range []bool{true, false} {
		id := "own-error"
		if !reported {
			id = "plain-error"
		}
		reg.Register(&sandbox.Experiment{
			ID: id, Needs: sandbox.NeedHost, Timeout: 10 * time.Second,
			Run: func(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
				err := fmt.Errorf("reg: %w", syscall.ENOMEM)
				if !reported {
					return err
				}
				emit.Emit(sandbox.Event{Type: sandbox.EvError, Call: "ibv_reg_mr", Message: "explained", Messages: sandbox.Text{"en": "explained", "zh": "已解释"}})
				return fmt.Errorf("wrapped: %w", sandbox.Reported(err))
			},
		})
	}
	for id, want := range map[string][]string{"own-error": {"explained"}, "plain-error": {"reg: cannot allocate memory"}} {
		var out strings.Builder
		in := strings.NewReader(`{"run_id":"r","experiment":"` + id + `","params":{}}` + "\n")
		err := sandbox.ServeAgent(context.Background(), reg, in, &out)
		var af *sandbox.AgentFailure
		if !errors.As(err, &af) {
			t.Fatalf("%s: err %v, want AgentFailure", id, err)
		}
		var got []string
		evs, end := agentEvents(t, out.String())
		for _, e := range evs {
			if e.Type == sandbox.EvError {
				got = append(got, e.Message)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: error events %q, want %q", id, got, want)
		}
		if end.Kind != sandbox.EndFailed || !strings.Contains(end.Error, "cannot allocate memory") {
			t.Errorf("%s: end %+v, want failed with the error's message", id, end)
		}
	}
	if sandbox.Reported(nil) != nil {
		t.Error("Reported(nil) is not nil")
	}
	if !errors.Is(sandbox.Reported(syscall.EPERM), syscall.EPERM) {
		t.Error("Reported hides the error it wraps")
	}
}
