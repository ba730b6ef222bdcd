package sandbox_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/hostexp"
	"github.com/rdmalab/rdmalab/sandbox/rdmaexp"
)

// fuzzRegistry is every experiment the lab serves.
func fuzzRegistry() []*sandbox.Experiment {
	reg := sandbox.NewRegistry()
	hostexp.Register(reg)
	rdmaexp.Register(reg)
	return reg.List()
}

// FuzzValidate feeds the params of POST /api/runs (any JSON object) to
// every real experiment. Validate must never panic; what it accepts must
// have every param, typed and within its bounds or choices; and it must
// accept its own output after a JSON round trip unchanged — the agent
// validates again after the request crossed a pipe or the guest's serial
// port, and a value that changed or failed there would fail the run.
func FuzzValidate(f *testing.F) {
	exps := fuzzRegistry()
	for i, e := range exps {
		for _, p := range e.Presets {
			b, _ := json.Marshal(p.Values)
			f.Add(uint8(i), string(b))
		}
		f.Add(uint8(i), `{}`)
	}
	for _, s := range []string{
		`{"seconds": 1e300}`, `{"seconds": -1}`, `{"seconds": 3.5}`, `{"msg_size": "64KiB"}`,
		`{"msg_size": "1 MiB"}`, `{"size": "9223372036854775807"}`, `{"size": 9223372036854775808}`,
		`{"limit": 65536}`, `{"limit": ["65536"]}`, `{"ipc_lock": true}`, `{"mistakes": "yes"}`,
		`{"iterations": null}`, `{"transport": {}}`, `{"__proto__": 1}`, `{"seconds": "0x10"}`,
	} {
		f.Add(uint8(0), s)
		f.Add(uint8(1), s)
	}
	f.Fuzz(func(t *testing.T, which uint8, raw string) {
		e := exps[int(which)%len(exps)]
		var in map[string]any
		if json.Unmarshal([]byte(raw), &in) != nil {
			return
		}
		p, err := e.Validate(in)
		if err != nil {
			if _, ok := err.(*sandbox.ParamError); !ok {
				t.Fatalf("%s: error %T %v, want *ParamError", e.ID, err, err)
			}
			return
		}
		checkParams(t, e, p)
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("%s: encode %v: %v", e.ID, p, err)
		}
		var again map[string]any
		if err := json.Unmarshal(b, &again); err != nil {
			t.Fatal(err)
		}
		p2, err := e.Validate(again)
		if err != nil {
			t.Fatalf("%s: accepted %s, but its JSON form %s is refused: %v", e.ID, raw, b, err)
		}
		if !reflect.DeepEqual(p, p2) {
			t.Fatalf("%s: %v changed to %v across JSON", e.ID, p, p2)
		}
	})
}

// checkParams: every declared param is present, of its Go type, within
// bounds or among its choices; nothing else is.
func checkParams(t *testing.T, e *sandbox.Experiment, p sandbox.Params) {
	t.Helper()
	if len(p) != len(e.Params) {
		t.Fatalf("%s: %d params validated, %d declared: %v", e.ID, len(p), len(e.Params), p)
	}
	for _, d := range e.Params {
		v, ok := p[d.Name]
		if !ok {
			t.Fatalf("%s: %s missing from %v", e.ID, d.Name, p)
		}
		switch d.Kind {
		case sandbox.ParamInt, sandbox.ParamBytes:
			n, ok := v.(int64)
			if !ok || n < d.Min || n > d.Max {
				t.Fatalf("%s: %s = %v (%T), want int64 in [%d, %d]", e.ID, d.Name, v, v, d.Min, d.Max)
			}
		case sandbox.ParamEnum:
			s, ok := v.(string)
			if !ok || !slices.ContainsFunc(d.Choices, func(c sandbox.Choice) bool { return c.Value == s }) {
				t.Fatalf("%s: %s = %v (%T), not one of its choices", e.ID, d.Name, v, v)
			}
		case sandbox.ParamBool:
			if _, ok := v.(bool); !ok {
				t.Fatalf("%s: %s = %v (%T), want bool", e.ID, d.Name, v, v)
			}
		}
	}
}
