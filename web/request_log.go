package web

import (
	"log/slog"
	"net/http"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5/middleware"
	"golang.org/x/time/rate"

	"github.com/rdmalab/rdmalab/web/page"
)

// The request log is bounded (issue 43 fall 6: anonymous GETs with long
// paths, 1,447 in 10 s from one address, wrote 1.45 GB of log). A line
// names at most logPathMax bytes of the path and logMethodMax of the
// method; each client address may log logBurst lines at once, then one
// per logEvery; all addresses together logAllBurst, then one per
// logAllEvery. Past its share an address's lines are dropped and
// counted: that is said once ("request log over its share", again at
// most every logNoteEvery), and the count rides on the address's next
// logged line. Requests themselves are not refused here.
const (
	logPathMax   = 200
	logMethodMax = 16
	logBurst     = 120
	logEvery     = 250 * time.Millisecond
	logAllBurst  = 2000
	logAllEvery  = 10 * time.Millisecond
	logNoteEvery = 10 * time.Minute // an address's abuse is said at most this often
)

// requestLog decides which request lines are written.
type requestLog struct {
	addr *keyedLimiter
	all  *rate.Limiter

	mu      sync.Mutex
	dropped map[string]*dropCount // per address over its share
	allDrop int                   // lines dropped by the limit of all addresses
}

// dropCount is an address's dropped lines since it was last logged, and
// when its being over its share was last said.
type dropCount struct {
	n    int
	said time.Time
}

func newRequestLog() *requestLog {
	return &requestLog{addr: newKeyedLimiter(logBurst, logEvery),
		all: rate.NewLimiter(rate.Every(logAllEvery), logAllBurst), dropped: map[string]*dropCount{}}
}

// clipLog is s cut to at most n bytes on a rune boundary, marked with "…"
// when cut.
func clipLog(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// logRequest writes r's request line, if its address and the whole log
// are within their shares.
func (s *Server) logRequest(rl *requestLog, r *http.Request, level slog.Level, status, bytes int, dur time.Duration) {
	addr := page.ClientIP(r)
	ok, _ := rl.addr.allow(addr)
	if ok && !rl.all.Allow() {
		ok = false
		rl.mu.Lock()
		rl.allDrop++
		first := rl.allDrop == 1
		rl.mu.Unlock()
		if first {
			s.log.Warn("request log over its share of all addresses: lines are dropped and counted", "every", logAllEvery)
		}
		return
	}
	rl.mu.Lock()
	d := rl.dropped[addr]
	if !ok {
		if d == nil {
			if len(rl.dropped) >= limiterKeys {
				clear(rl.dropped)
			}
			d = &dropCount{}
			rl.dropped[addr] = d
		}
		d.n++
		now := time.Now()
		say := now.Sub(d.said) >= logNoteEvery
		if say {
			d.said = now
		}
		rl.mu.Unlock()
		if say {
			s.log.Warn("request log over its share for this address: its lines are dropped and counted", "addr", addr,
				"burst", logBurst, "every", logEvery)
		}
		return
	}
	drops, allDrops := 0, rl.allDrop
	if d != nil {
		drops, d.n = d.n, 0
	}
	rl.allDrop = 0
	rl.mu.Unlock()
	attrs := []slog.Attr{
		slog.String("method", clipLog(r.Method, logMethodMax)),
		slog.String("path", clipLog(r.URL.Path, logPathMax)),
		slog.Int("status", status),
		slog.Int("bytes", bytes),
		slog.Duration("dur", dur),
		slog.String("req", middleware.GetReqID(r.Context())),
	}
	if drops > 0 {
		attrs = append(attrs, slog.String("addr", addr), slog.Int("dropped_before", drops))
	}
	if allDrops > 0 {
		attrs = append(attrs, slog.Int("dropped_all_before", allDrops))
	}
	s.log.LogAttrs(r.Context(), level, "http", attrs...)
}
