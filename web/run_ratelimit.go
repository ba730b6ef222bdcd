package web

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Starting runs is the one thing a learner can do that costs the lab real
// work (a child process or a guest run). The runner already allows one
// active run per learner and bounds its queue; this limit stops a script
// that submits, cancels and resubmits in a loop from churning the sandbox
// for everyone. It is a token bucket per learner: runBurst submissions at
// once, then one per runRefill.
const (
	runBurst  = 10
	runRefill = 6 * time.Second
	// runLimitKeys bounds the limiter's memory. Past it, idle learners are
	// forgotten; if every one is busy the table starts over (a brief lapse
	// in limiting is better than refusing newcomers).
	runLimitKeys = 50_000
)

// CodeRateLimited is a learner's own request rate being too high (429).
// The queue being full for everyone is CodeBusy.
const CodeRateLimited Code = "rate_limited"

func init() {
	codeStatus[CodeRateLimited] = http.StatusTooManyRequests
	addStrings("zh", map[string]string{
		"run.err.rate": "你提交实验太频繁了：请 %d 秒后再试。",
	})
	addStrings("en", map[string]string{
		"run.err.rate": "You are starting runs too often: try again in %d s.",
	})
}

// rateLimiter is a token bucket per key.
type rateLimiter struct {
	burst   float64
	refill  time.Duration // time to earn one token
	maxKeys int
	now     func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time // when tokens was computed
}

func newRateLimiter(burst int, refill time.Duration, maxKeys int) *rateLimiter {
	return &rateLimiter{burst: float64(burst), refill: refill, maxKeys: maxKeys, now: time.Now,
		buckets: map[string]*bucket{}}
}

// allow takes a token for key. When none is left it reports how long
// until the next one.
func (l *rateLimiter) allow(key string) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b := l.buckets[key]
	if b == nil {
		if len(l.buckets) >= l.maxKeys {
			l.pruneLocked(now)
		}
		b = &bucket{tokens: l.burst, at: now}
		l.buckets[key] = b
	}
	b.tokens = math.Min(l.burst, b.tokens+float64(now.Sub(b.at))/float64(l.refill))
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) * float64(l.refill))
}

// pruneLocked forgets keys whose bucket has refilled (they would start
// full anyway); if none has, it starts over.
func (l *rateLimiter) pruneLocked(now time.Time) {
	full := time.Duration(l.burst * float64(l.refill))
	for k, b := range l.buckets {
		if now.Sub(b.at) >= full {
			delete(l.buckets, k)
		}
	}
	if len(l.buckets) >= l.maxKeys {
		clear(l.buckets)
	}
}

// limitRuns returns the middleware that rate-limits run submissions per
// learner (POST /api/runs and the no-JavaScript POST /runs share one
// limiter). It must run after withLearner.
func (s *Server) limitRuns() func(http.Handler) http.Handler {
	l := newRateLimiter(runBurst, runRefill, runLimitKeys)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ok, wait := l.allow(learnerID(r))
			if ok {
				next.ServeHTTP(w, r)
				return
			}
			secs := int(math.Ceil(wait.Seconds()))
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			s.log.Warn("run rate limit", "learner", learnerID(r)[:min(8, len(learnerID(r)))], "retry_after_s", secs)
			e := Errorf(CodeRateLimited, trf(langOf(r), "run.err.rate", secs))
			if isAPI(r) {
				s.writeError(w, r, e)
				return
			}
			s.refused(w, r, e)
		})
	}
}
