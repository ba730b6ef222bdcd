package sandbox

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func paramsExperiment() *Experiment {
	return &Experiment{
		ID: "p",
		Params: []Param{
			{Name: "seconds", Kind: ParamInt, Min: 1, Max: 10, Unit: "s", Default: int64(3)},
			{Name: "size", Kind: ParamBytes, Min: 64, Max: 1 << 20, Default: int64(64 << 10)},
			{Name: "limit", Kind: ParamEnum, Default: "65536", Choices: []Choice{{Value: "65536"}, {Value: "8388608"}, {Value: "unlimited"}}},
			{Name: "poll", Kind: ParamBool, Default: false},
		},
		Run: func(context.Context, Params, Emitter) error { return nil },
	}
}

func TestValidate(t *testing.T) {
	e := paramsExperiment()
	cases := []struct {
		name    string
		raw     map[string]any
		want    Params
		param   string // the param the error must name
		message string // a part of the error message
	}{
		{name: "defaults", raw: nil, want: Params{"seconds": int64(3), "size": int64(65536), "limit": "65536", "poll": false}},
		{name: "json numbers", raw: map[string]any{"seconds": 10.0, "size": 64.0}, want: Params{"seconds": int64(10), "size": int64(64), "limit": "65536", "poll": false}},
		{name: "form strings", raw: map[string]any{"seconds": "2", "size": "1MiB", "limit": "unlimited", "poll": "on"}, want: Params{"seconds": int64(2), "size": int64(1 << 20), "limit": "unlimited", "poll": true}},
		{name: "enum given as number", raw: map[string]any{"limit": 8388608.0}, want: Params{"seconds": int64(3), "size": int64(65536), "limit": "8388608", "poll": false}},
		{name: "int too big", raw: map[string]any{"seconds": 11.0}, param: "seconds", message: "must be between 1 s and 10 s (got 11 s)"},
		{name: "int too small", raw: map[string]any{"seconds": 0.0}, param: "seconds", message: "between 1 s and 10 s"},
		{name: "fraction", raw: map[string]any{"seconds": 1.5}, param: "seconds", message: "whole number"},
		{name: "bytes above max", raw: map[string]any{"size": "2MiB"}, param: "size", message: "must be between 64 B and 1 MiB (got 2 MiB)"},
		{name: "bytes below min", raw: map[string]any{"size": 1.0}, param: "size", message: "between 64 B and 1 MiB"},
		{name: "not a number", raw: map[string]any{"size": "lots"}, param: "size", message: `want a whole number of bytes, with an optional unit k/KiB, m/MiB or g/GiB (like 4KiB or 64k), got "lots"`},
		{name: "wrong type", raw: map[string]any{"seconds": true}, param: "seconds", message: "want a number"},
		{name: "enum unknown", raw: map[string]any{"limit": "1GiB"}, param: "limit", message: "must be one of 65536, 8388608, unlimited"},
		{name: "bool garbage", raw: map[string]any{"poll": "maybe"}, param: "poll", message: "true or false"},
		{name: "unknown param", raw: map[string]any{"cmd": "rm -rf /"}, param: "cmd", message: "unknown param of p (known: seconds, size, limit, poll)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := e.Validate(c.raw)
			if c.param == "" {
				if err != nil {
					t.Fatal(err)
				}
				for k, v := range c.want {
					if got[k] != v {
						t.Errorf("%s = %#v, want %#v", k, got[k], v)
					}
				}
				return
			}
			var pe *ParamError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v, want *ParamError", err)
			}
			if pe.Param != c.param || !strings.Contains(pe.Message, c.message) {
				t.Errorf("got %q on %q, want %q on %q", pe.Message, pe.Param, c.message, c.param)
			}
		})
	}
}

func TestRegisterRejectsBadDefinitions(t *testing.T) {
	bad := map[string]func(e *Experiment){
		"default out of bounds": func(e *Experiment) { e.Params[0].Default = int64(99) },
		"invalid preset":        func(e *Experiment) { e.Presets = []Preset{{ID: "x", Values: map[string]any{"size": 1}}} },
		"duplicate param":       func(e *Experiment) { e.Params[1].Name = "seconds" },
		"enum without choices":  func(e *Experiment) { e.Params[2].Choices = nil },
	}
	for name, mutate := range bad {
		t.Run(name, func(t *testing.T) {
			e := paramsExperiment()
			mutate(e)
			defer func() {
				if recover() == nil {
					t.Error("Register accepted a bad definition")
				}
			}()
			NewRegistry().Register(e)
		})
	}
}

func TestCheckParams(t *testing.T) {
	reg := NewRegistry()
	reg.Register(paramsExperiment())
	if err := reg.CheckParams("p", map[string]string{"size": "4096", "limit": "65536"}); err != nil {
		t.Errorf("valid directive: %v", err)
	}
	if err := reg.CheckParams("nope", nil); !errors.Is(err, ErrUnknownExperiment) {
		t.Errorf("unknown id: %v", err)
	}
	if err := reg.CheckParams("p", map[string]string{"size": "1"}); err == nil || !strings.Contains(err.Error(), `param "size"`) {
		t.Errorf("bad value: %v", err)
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{64: "64 B", 65536: "64 KiB", 1 << 20: "1 MiB", 1500: "1500 B", 3 << 30: "3 GiB"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// A parameter error says the bounds in each language: no English inside
// the Chinese message.
func TestParamErrorLocalized(t *testing.T) {
	e := &Experiment{ID: "x", Params: []Param{{Name: "size", Kind: ParamBytes, Min: 64, Max: 1 << 20, Default: int64(64)}}}
	for _, raw := range []map[string]any{{"size": 2 << 20}, {"nope": 1}} {
		_, err := e.Validate(raw)
		var pe *ParamError
		if !errors.As(err, &pe) {
			t.Fatalf("%v: %v", raw, err)
		}
		zh := pe.Messages["zh"]
		if zh == "" || pe.Messages["en"] != pe.Message || strings.Contains(zh, "must") || strings.Contains(zh, "unknown") {
			t.Errorf("%v: messages %q", raw, pe.Messages)
		}
	}
}
