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

// OptionsFor is the order in which learner sees q's options: choices
// (single, multi) shuffled by a seed of the learner and the question, so
// the same learner sees the same order on every visit while the correct
// option is not always first; order questions as DisplayOptions. Grading
// is by option id, so the order changes nothing else.
func (q *Question) OptionsFor(learner string) []Option {
	if q.Type == Order || learner == "" || len(q.Options) < 2 {
		return q.DisplayOptions()
	}
	order := q.choiceOrder(learner)
	opts := make([]Option, len(order))
	for i, k := range order {
		opts[i] = q.Options[k]
	}
	return opts
}

// OptionOrder is OptionsFor as indexes into q.Options, without copying
// options: a lesson page puts pre-rendered option items in this order.
func (q *Question) OptionOrder(learner string) []int {
	if q.Type == Order || learner == "" || len(q.Options) < 2 {
		display := q.DisplayOptions()
		order := make([]int, len(display))
		for i, o := range display {
			order[i] = slices.IndexFunc(q.Options, func(p Option) bool { return p.ID == o.ID })
		}
		return order
	}
	return q.choiceOrder(learner)
}

// choiceOrder shuffles the indexes of q.Options by a seed of the learner
// and the question.
func (q *Question) choiceOrder(learner string) []int {
	order := make([]int, len(q.Options))
	for i := range order {
		order[i] = i
	}
	h := fnv.New64a()
	h.Write([]byte(learner))
	h.Write([]byte{0})
	h.Write([]byte(q.ID))
	rng := rand.New(rand.NewPCG(h.Sum64(), 0xc401ce))
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	return order
}

// Option returns the option with id, or nil.
func (q *Question) Option(id string) *Option { return q.option(id) }
