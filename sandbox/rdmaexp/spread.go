package rdmaexp

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
)

// spread is how a set of timed samples is spread out, so a table can show
// it beside the median and a verdict can ask whether two sets differ by
// more than their own scatter (DESIGN.md: a verdict must survive a rerun).
type spread struct {
	N                  int
	Min, P25, Med, P75 time.Duration
	Max, Mean          time.Duration
}

// spreadOf is d's spread (all zero when d is empty). Percentiles are the
// nearest-rank ones, so every figure is a sample that was measured.
func spreadOf(d []time.Duration) spread {
	if len(d) == 0 {
		return spread{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	var sum time.Duration
	for _, x := range s {
		sum += x
	}
	at := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))] }
	return spread{N: len(s), Min: s[0], P25: at(0.25), Med: s[len(s)/2], P75: at(0.75), Max: s[len(s)-1], Mean: sum / time.Duration(len(s))}
}

// midText is the middle half "p25–p75" in µs, as tables print it.
func (s spread) midText() string { return fmt.Sprintf("%s–%s", f1(us(s.P25)), f1(us(s.P75))) }

// below says whether every sample of a's middle half is below b's: the
// two differ by more than their scatter. Compared as printed (one decimal
// in µs), so a verdict never calls apart two ranges the table shows
// touching.
func (a spread) below(b spread) bool { return f1(us(a.P75)) != f1(us(b.P25)) && a.P75 < b.P25 }

// floatSpread is the spread of plain figures (goodput percentages, MB/s).
type floatSpread struct {
	N             int
	Min, Med, Max float64
}

// floatSpreadOf is v's spread (zero when v is empty).
func floatSpreadOf(v []float64) floatSpread {
	if len(v) == 0 {
		return floatSpread{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return floatSpread{N: len(s), Min: s[0], Med: med, Max: s[len(s)-1]}
}

// perfRounds is how many rounds a perf-* experiment measures each figure
// its verdict compares (DESIGN.md: a verdict must survive a rerun). The
// bound is fixed, not "until firm": stopping once the rounds happen to
// part would make firm verdicts out of noise. Five rounds of one figure
// that does not differ all land above five rounds of the other by chance
// once in 252 runs; three (loss-sweep's lossRounds, each round seconds
// long) once in 20.
const perfRounds = 5

// say prints s as tables and verdicts do, with prec decimals: "median
// (lowest–highest)", in Chinese with full-width parentheses.
func (s floatSpread) say(prec int) sandbox.Text {
	return sandbox.Text{
		"en": fmt.Sprintf("%.*f (%.*f–%.*f)", prec, s.Med, prec, s.Min, prec, s.Max),
		"zh": fmt.Sprintf("%.*f（%.*f–%.*f）", prec, s.Med, prec, s.Min, prec, s.Max),
	}
}

// rangeText is "lowest–highest" with prec decimals.
func (s floatSpread) rangeText(prec int) string {
	return fmt.Sprintf("%.*f–%.*f", prec, s.Min, prec, s.Max)
}

// scaled is s with every figure multiplied by k (rates in k msg/s).
func (s floatSpread) scaled(k float64) floatSpread {
	return floatSpread{N: s.N, Min: s.Min * k, Med: s.Med * k, Max: s.Max * k}
}

// order says how two spreads lie, compared as printed with prec decimals
// so a verdict never calls apart two ranges the table shows touching: 1
// when every round of a is above every round of b, -1 when below, 0 when
// they overlap (too noisy to say). It is the "verdict" figure the rerun
// test compares: a firm 1 in one run and -1 in another is a flip.
func order(a, b floatSpread, prec int) float64 {
	p := func(v float64) float64 {
		f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', prec, 64), 64)
		return f
	}
	switch {
	case p(a.Min) > p(b.Max):
		return 1
	case p(a.Max) < p(b.Min):
		return -1
	}
	return 0
}

// metricSpread charts one step of a spread: the median as the line and
// the lowest and highest round as the band around it (experiment.js
// pairs series name_lo / name_hi with name).
func metricSpread(emit sandbox.Emitter, series string, label sandbox.Text, x float64, s floatSpread, unit string) {
	emit.Emit(sandbox.Event{Type: sandbox.EvMetric, Series: series, X: x, Y: round2(s.Med), Unit: unit, Message: label["en"], Messages: label})
	lo := say(label["en"]+", lowest round", label["zh"]+"，最低一轮")
	hi := say(label["en"]+", highest round", label["zh"]+"，最高一轮")
	emit.Emit(sandbox.Event{Type: sandbox.EvMetric, Series: series + "_lo", X: x, Y: round2(s.Min), Unit: unit, Message: lo["en"], Messages: lo})
	emit.Emit(sandbox.Event{Type: sandbox.EvMetric, Series: series + "_hi", X: x, Y: round2(s.Max), Unit: unit, Message: hi["en"], Messages: hi})
}

// tooNoisy is the wording of a verdict the spread does not allow, in
// both languages: "too noisy on this machine to say", then why.
func tooNoisy(why sandbox.Text) sandbox.Text {
	return say("too noisy on this machine to say: "+why["en"], "在这台机器上噪声太大，说不准："+why["zh"])
}

// overlapWhy is why two spreads leave nothing to say: over rounds rounds
// the ranges of what (both languages) overlap.
func overlapWhy(what sandbox.Text, rounds int) sandbox.Text {
	return tooNoisy(say(fmt.Sprintf("over %d rounds the ranges of %s overlap, so a rerun could order them either way", rounds, what["en"]),
		fmt.Sprintf("%d 轮中%s的范围互相重叠，重跑一次两者的先后可能颠倒", rounds, what["zh"])))
}
