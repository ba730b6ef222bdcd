package quiz

import (
	"hash/fnv"
	"math/rand/v2"
	"slices"
)

// DisplayOptions is the order in which a form shows q's options. Choices
// keep the authored order; the steps of an order question are shuffled,
// because the authored order is the answer. The shuffle is seeded by the
// question id so every page load (and every test) shows the same order, and
// it never equals the answer when there are at least two steps.
func (q *Question) DisplayOptions() []Option {
	opts := slices.Clone(q.Options)
	if q.Type != Order || len(opts) < 2 {
		return opts
	}
	h := fnv.New64a()
	h.Write([]byte(q.ID))
	rng := rand.New(rand.NewPCG(h.Sum64(), 0x5eed))
	rng.Shuffle(len(opts), func(i, j int) { opts[i], opts[j] = opts[j], opts[i] })
	if slices.EqualFunc(opts, q.Options, func(a, b Option) bool { return a.ID == b.ID }) {
		// Rotating by one moves every step off its place.
		opts = append(opts[1:], opts[0])
	}
	return opts
}
