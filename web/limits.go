package web

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limits bounds what one client can make the lab do. Learners are
// anonymous (a cookie), so a client that drops its cookie becomes a new
// learner on every request: every per-learner limit is therefore paired
// with one per client address (ClientAddrConfig says how the address is
// found behind a proxy). A zero field takes its DefaultLimits value; a
// negative one turns that limit off.
type Limits struct {
	// RunsPerAddr is how many runs one address may have queued or running
	// at once (the runner allows one per learner).
	RunsPerAddr int
	// RunBurst runs may be submitted at once per learner, then one per
	// RunEvery; per address the burst is AddrRunBurst.
	RunBurst     int
	RunEvery     time.Duration
	AddrRunBurst int
	AddrRunEvery time.Duration
	// WriteBurst writes (quiz attempts, completions, names…) at once per
	// address, then one per WriteEvery.
	WriteBurst int
	WriteEvery time.Duration
	// NewLearnerBurst learners may first write from one address at once,
	// then one per NewLearnerEvery: this bounds how many learner rows one
	// client can create. A class behind one NAT address of 30 is well inside.
	NewLearnerBurst int
	NewLearnerEvery time.Duration
	// BodyTimeout is how long a client may take to send a request body.
	BodyTimeout time.Duration
	// ConnsPerAddr bounds open connections per address (LimitListener);
	// trusted proxies are exempt.
	ConnsPerAddr int
	// TerminalsPerAddr is how many learners of one address may hold a
	// terminal (in use or waiting) at once; 0: half of the terminals, at
	// least one (terminal_fair.go).
	TerminalsPerAddr int
}

// DefaultLimits are generous for a class and tight for a script.
var DefaultLimits = Limits{
	RunsPerAddr:     4,
	RunBurst:        10,
	RunEvery:        6 * time.Second,
	AddrRunBurst:    30,
	AddrRunEvery:    2 * time.Second,
	WriteBurst:      120,
	WriteEvery:      100 * time.Millisecond,
	NewLearnerBurst: 60,
	NewLearnerEvery: 10 * time.Second,
	BodyTimeout:     10 * time.Second,
	ConnsPerAddr:    256,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	pick := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	pickD := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	pick(&l.RunsPerAddr, d.RunsPerAddr)
	pick(&l.RunBurst, d.RunBurst)
	pickD(&l.RunEvery, d.RunEvery)
	pick(&l.AddrRunBurst, d.AddrRunBurst)
	pickD(&l.AddrRunEvery, d.AddrRunEvery)
	pick(&l.WriteBurst, d.WriteBurst)
	pickD(&l.WriteEvery, d.WriteEvery)
	pick(&l.NewLearnerBurst, d.NewLearnerBurst)
	pickD(&l.NewLearnerEvery, d.NewLearnerEvery)
	pickD(&l.BodyTimeout, d.BodyTimeout)
	pick(&l.ConnsPerAddr, d.ConnsPerAddr)
	return l
}

// limiters are the server's live limits.
type limiters struct {
	runLearner *keyedLimiter // run submissions per learner
	runAddr    *keyedLimiter // run submissions per address
	write      *keyedLimiter // writes per address
	newLearner *keyedLimiter // first writes of new learners per address
	active     activeRuns    // queued/running runs per address
	taskCheck  *keyedLimiter // task checks per learner (task_check.go)
}

func newLimiters(l Limits) *limiters {
	return &limiters{
		runLearner: newKeyedLimiter(l.RunBurst, l.RunEvery),
		runAddr:    newKeyedLimiter(l.AddrRunBurst, l.AddrRunEvery),
		write:      newKeyedLimiter(l.WriteBurst, l.WriteEvery),
		newLearner: newKeyedLimiter(l.NewLearnerBurst, l.NewLearnerEvery),
		taskCheck:  newKeyedLimiter(taskCheckBurst, taskCheckEvery),
		active:     activeRuns{max: l.RunsPerAddr, runs: map[string][]string{}},
	}
}

// limiterKeys bounds a keyedLimiter's memory. Past it, keys whose bucket
// is full again are forgotten (a new one would start full anyway); if none
// is, the table starts over: a brief lapse in limiting beats refusing
// newcomers or growing without bound.
const limiterKeys = 50_000

// keyedLimiter is a token bucket (x/time/rate) per key. A nil one, or one
// built with burst < 0, allows everything.
type keyedLimiter struct {
	burst int
	every time.Duration
	now   func() time.Time

	mu sync.Mutex
	m  map[string]*rate.Limiter
}

func newKeyedLimiter(burst int, every time.Duration) *keyedLimiter {
	if burst < 0 || every < 0 {
		return nil
	}
	return &keyedLimiter{burst: burst, every: every, now: time.Now, m: map[string]*rate.Limiter{}}
}

// allow takes a token for key; when none is left it reports how long
// until one will be.
func (k *keyedLimiter) allow(key string) (bool, time.Duration) {
	if k == nil {
		return true, 0
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.now()
	l := k.m[key]
	if l == nil {
		if len(k.m) >= limiterKeys {
			k.pruneLocked(now)
		}
		l = rate.NewLimiter(rate.Every(k.every), k.burst)
		k.m[key] = l
	}
	r := l.ReserveN(now, 1)
	if !r.OK() {
		return false, k.every
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

func (k *keyedLimiter) pruneLocked(now time.Time) {
	for key, l := range k.m {
		if l.TokensAt(now) >= float64(k.burst) {
			delete(k.m, key)
		}
	}
	if len(k.m) >= limiterKeys {
		clear(k.m)
	}
}

// activeRuns counts each address's runs that are still queued or running.
type activeRuns struct {
	max int
	mu  sync.Mutex
	// runs holds, per address, the ids of runs submitted from it that were
	// not yet seen final. It is pruned on every check, so it holds at most
	// max ids per address plus addresses that submitted recently.
	runs map[string][]string
}

// full reports whether key already has max live runs; live tells whether
// a run id is still queued or running.
func (a *activeRuns) full(key string, live func(id string) bool) bool {
	if a.max < 0 {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	ids := a.runs[key][:0]
	for _, id := range a.runs[key] {
		if live(id) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		delete(a.runs, key)
	} else {
		a.runs[key] = ids
	}
	return len(ids) >= a.max
}

func (a *activeRuns) add(key, id string) {
	if a.max < 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.runs) >= limiterKeys {
		clear(a.runs)
	}
	a.runs[key] = append(a.runs[key], id)
}

// Limits are the limits in force (defaults filled in).
func (s *Server) Limits() Limits { return s.cfg.Limits }
