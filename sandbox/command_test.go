package sandbox_test

import (
	"errors"
	"testing"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/sandboxtest"
)

func TestDecodeCommandIsStrict(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string // "" = error
	}{
		{`{"cmd":"next"}`, "next"},
		{`{"cmd":"next","args":"rm -rf /"}`, ""},
		{`{"cmd":""}`, ""},
		{`{}`, ""},
		{`"next"`, ""},
		{`{"cmd":"a"}{"cmd":"b"}`, ""},
		{`{"cmd":7}`, ""},
	} {
		got, err := sandbox.DecodeCommand([]byte(c.in))
		if c.want == "" {
			var ce *sandbox.CommandError
			if !errors.As(err, &ce) {
				t.Errorf("%s: %v %v, want a CommandError", c.in, got, err)
			}
			continue
		}
		if err != nil || got.Cmd != c.want {
			t.Errorf("%s: %v %v", c.in, got, err)
		}
	}
	reg := sandboxtest.Registry()
	if err := reg.Get("counter").ValidateCommand(sandbox.Command{Cmd: "shell"}); err == nil {
		t.Error("counter accepted an undeclared command")
	}
	if err := reg.Get("echo").ValidateCommand(sandbox.Command{Cmd: "add"}); !errors.Is(err, sandbox.ErrNotInteractive) {
		t.Errorf("echo: %v", err)
	}
}
