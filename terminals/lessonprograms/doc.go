// Package lessonprograms is the guest suite of the course's program
// exercises: every lesson's :::program run in a real learner guest
// through package terminal, as a learner's Run does (solutions pass,
// starters and programs that only print fail, the abuse cases end
// bounded), and the peer's folder kept apart from run to run.
//
// It is a package of its own so that go test runs it beside the rest of
// package terminal's guest tests: together they were the longest package
// of make test.
package lessonprograms
