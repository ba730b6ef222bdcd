package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"time"
)

// startDebug serves Go's profiles (net/http/pprof: CPU, heap, block,
// mutex, goroutines, execution trace) on addr, which must be a loopback
// address: they show the program's internals and are for an admin on the
// machine chasing a latency tail (docs/operations.md, "Profiling"). It is
// off unless LAB_DEBUG_ADDR is set; block and mutex profiling are switched
// on with it, at a sampling rate cheap enough to leave on under load.
func startDebug(addr string, log *slog.Logger) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("LAB_DEBUG_ADDR %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("LAB_DEBUG_ADDR %q: profiles are served on a loopback address only (127.0.0.1:PORT)", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("LAB_DEBUG_ADDR: %w", err)
	}
	runtime.SetBlockProfileRate(int(100 * time.Microsecond)) // one sample per 100 µs blocked
	runtime.SetMutexProfileFraction(20)
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	log.Info("profiles", "url", "http://"+ln.Addr().String()+"/debug/pprof/")
	return nil
}
