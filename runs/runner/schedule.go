package runner

import (
	"time"
)

// The runner's scheduling rules, kept free of the runner's state so the
// same rules decide what starts now (admit) and predict when each waiting
// run starts (estimate):
//
//   - The queue is served in order of submission. With one active run per
//     learner, that order is fair across learners: nobody's second run can
//     come before anybody's first.
//   - A shareable run starts as soon as its backend has a free slot (a
//     guest of the pool, a CPU of the host backend) and the global limit
//     allows; one whose backend is full lets later runs for other
//     backends start meanwhile.
//   - A timing run needs the machine to itself: it starts only when
//     nothing runs, nothing starts beside it, and no run behind it in the
//     queue overtakes it while it waits for the machine to empty.

// schedItem is one run as the rules see it.
type schedItem struct {
	key    any           // the backend it runs on (runs on one backend share its slots)
	slots  int           // that backend's slots
	timing bool          // needs the machine to itself
	expect time.Duration // how long such a run takes (0: unknown)
	left   time.Duration // running: expected time still to go
}

// admit returns the indices of queued runs that may start now, in order.
func admit(running []schedItem, queue []schedItem, limit int) []int {
	busy := map[any]int{}
	timing := false
	for _, r := range running {
		busy[r.key]++
		timing = timing || r.timing
	}
	n := len(running)
	var start []int
	if timing {
		return nil
	}
	for i, q := range queue {
		if n >= limit {
			break
		}
		if q.timing {
			if n == 0 {
				start = append(start, i)
			}
			break // it runs alone, or waits at the head of what may start
		}
		if busy[q.key] >= max(q.slots, 1) {
			continue
		}
		busy[q.key]++
		n++
		start = append(start, i)
	}
	return start
}

// estimate predicts how long each queued run waits before it starts, by
// playing the rules forward with the expected durations. ok is false for a
// run whose wait depends on a duration nobody knows yet.
func estimate(running []schedItem, queue []schedItem, limit int) (waits []time.Duration, ok []bool) {
	waits = make([]time.Duration, len(queue))
	ok = make([]bool, len(queue))
	type live struct {
		schedItem
		known bool
	}
	var now time.Duration
	var run []live
	known := true // every run that finishes before this point has a known length
	for _, r := range running {
		run = append(run, live{r, r.expect > 0})
	}
	waiting := make([]int, len(queue)) // indices into queue still waiting
	for i := range queue {
		waiting[i] = i
	}
	for len(waiting) > 0 {
		cur := make([]schedItem, len(run))
		for i, r := range run {
			cur[i] = r.schedItem
		}
		q := make([]schedItem, len(waiting))
		for i, w := range waiting {
			q[i] = queue[w]
		}
		starts := admit(cur, q, limit)
		if len(starts) > 0 {
			rest := waiting[:0:0]
			next := 0
			for i, w := range waiting {
				if next < len(starts) && starts[next] == i {
					next++
					waits[w], ok[w] = now, known
					it := queue[w]
					it.left = it.expect
					run = append(run, live{it, it.expect > 0})
					continue
				}
				rest = append(rest, w)
			}
			waiting = rest
			continue
		}
		if len(run) == 0 {
			break // cannot happen: an empty machine admits the head
		}
		// Advance to the next run's end.
		first := 0
		for i, r := range run {
			if r.left < run[first].left {
				first = i
			}
		}
		step := run[first].left
		known = known && run[first].known
		now += step
		for i := range run {
			run[i].left -= step
		}
		run = append(run[:first], run[first+1:]...)
	}
	return waits, ok
}

// remaining is what is left of a run expected to take expect that has been
// going for elapsed; a run past its expected time still has a little left.
func remaining(expect, elapsed time.Duration) time.Duration {
	return max(expect-elapsed, expect/10)
}
