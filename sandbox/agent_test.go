package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

func agentEvents(t *testing.T, out string) []Event {
	t.Helper()
	var evs []Event
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		evs = append(evs, e)
	}
	return evs
}

func TestServeAgentValidatesAgain(t *testing.T) {
	var out strings.Builder
	in := strings.NewReader(`{"run_id":"r","experiment":"echo","params":{"n":1000}}` + "\n")
	err := ServeAgent(context.Background(), testRegistry(), in, &out)
	var af *AgentFailure
	if !errors.As(err, &af) {
		t.Fatalf("err %v, want AgentFailure", err)
	}
	evs := agentEvents(t, out.String())
	if len(evs) != 2 || evs[0].Type != EvError || !strings.Contains(evs[0].Message, `param "n": must be between 1 and 100`) ||
		evs[1].Status != StatusFailed {
		t.Errorf("events %+v", evs)
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
		if err := ServeAgent(context.Background(), testRegistry(), r, &out); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		evs := agentEvents(t, out.String())
		if len(evs) != n+2 || evs[len(evs)-1].Status != StatusDone {
			t.Errorf("request %d: %+v", i, evs)
		}
	}
	if err := ServeAgent(context.Background(), testRegistry(), r, io.Discard); !errors.Is(err, io.EOF) {
		t.Errorf("after the last request: %v, want EOF", err)
	}
}

func TestAgentReaderProtocolErrors(t *testing.T) {
	cases := map[string]string{
		"garbage":   "{\"type\":\"log\",\"message\":\"ok\"}\nhello\n",
		"early end": "{\"type\":\"log\",\"message\":\"ok\"}\n",
		"long line": `{"type":"log","message":"` + strings.Repeat("x", 2000) + "\"}\n",
		"no type":   "{\"message\":\"x\"}\n",
	}
	for name, stream := range cases {
		t.Run(name, func(t *testing.T) {
			var got []Event
			err := NewAgentReader(strings.NewReader(stream), 1000).ReadRun(func(e Event) { got = append(got, e) })
			var pe *ProtocolError
			if !errors.As(err, &pe) {
				t.Fatalf("err %v, want ProtocolError", err)
			}
		})
	}
}
