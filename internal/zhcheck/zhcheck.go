// Package zhcheck finds English prose (Prose), and Western punctuation and
// English label words (Leaks), in text meant for a Chinese page: the checks
// behind e2e's replay and Chinese-page tests and the tests that every
// reason a learner or admin reads is written in Chinese where it is made.
package zhcheck

import (
	"regexp"
	"strings"
)

// plainWord is an English word as prose has them: letters only, lower case
// or capitalised (acronyms such as RDMA, identifiers such as rxe0 or
// ibv_reg_mr, units and numbers are not).
var plainWord = regexp.MustCompile(`^[A-Za-z][a-z]+$`)

// allowedPairs are two-word English names a Chinese page may carry:
// commands and the spec's own terms.
var allowedPairs = map[string]bool{
	"rdma resource": true, "rdma statistic": true, "tc netem": true, "traffic class": true,
	// IB opcode names (RDMA READ Response First …), as the packet list shows them
	"response first": true, "response middle": true, "response last": true, "response only": true,
	// … and those with an immediate or an invalidate (SEND Only with
	// Invalidate, RDMA WRITE Last with Immediate), as the capture's
	// packet detail shows them
	"only with immediate": true, "last with immediate": true,
	"only with invalidate": true, "last with invalidate": true,
}

// quoted is text in quotation marks: a quotation of what the system says
// ("Cannot allocate memory") or sent, which a learner must recognise as is.
var quoted = regexp.MustCompile(`“[^”]*”|"[^"]*"|‘[^’]*’`)

// tokenRE finds word-like tokens; what lies between two tokens decides
// whether they belong to one run of prose (spaces, commas, hyphens) or not.
var tokenRE = regexp.MustCompile(`[A-Za-z0-9_'’./%+µ-]+`)

// hexBytes is a dump of four or more bytes in hex ("45 00 be ae"), as
// ud-vs-rc shows a GRH: bytes such as "be ae" are not words.
var hexBytes = regexp.MustCompile(`\b(?:[0-9a-fA-F]{2}\s+){3,}[0-9a-fA-F]{2}\b`)

// Prose is the runs of English prose in s, a text of a Chinese page,
// leaving out its quotations and hex dumps.
func Prose(s string) []string {
	return englishProse(hexBytes.ReplaceAllString(quoted.ReplaceAllString(s, " "), " "))
}

// englishProse returns the runs of two or more plain English words in s.
func englishProse(s string) []string {
	var out, run []string
	flush := func() {
		if len(run) >= 2 && !allowedPairs[strings.ToLower(strings.Join(run, " "))] {
			out = append(out, strings.Join(run, " "))
		}
		run = run[:0]
	}
	prevEnd := 0
	for _, m := range tokenRE.FindAllStringIndex(s, -1) {
		gap := s[prevEnd:m[0]]
		if strings.Trim(gap, " ,") != "" {
			flush()
		}
		prevEnd = m[1]
		tok := s[m[0]:m[1]]
		w := strings.TrimRight(tok, ".")
		if plainWord.MatchString(w) {
			run = append(run, w)
			if w != tok { // a full stop ends the run
				flush()
			}
			continue
		}
		flush()
	}
	flush()
	return out
}
