package main

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

// Profiles show the program's internals: they are served on loopback only.
func TestDebugLoopbackOnly(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:6060", "example.com:6060", "nonsense"} {
		if err := startDebug(addr, log); err == nil {
			t.Errorf("LAB_DEBUG_ADDR=%s was accepted", addr)
		}
	}
	if err := startDebug("127.0.0.1:0", log); err != nil {
		t.Fatal(err)
	}
}

// The listener answers with the pprof index.
func TestDebugServesProfiles(t *testing.T) {
	var buf strings.Builder
	log := slog.New(slog.NewTextHandler(&buf, nil))
	if err := startDebug("127.0.0.1:0", log); err != nil {
		t.Fatal(err)
	}
	i := strings.Index(buf.String(), "url=")
	if i < 0 {
		t.Fatalf("no url logged: %s", buf.String())
	}
	url := strings.Fields(buf.String()[i+4:])[0]
	res, err := http.Get(url + "block")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Errorf("GET %sblock: %d", url, res.StatusCode)
	}
}
