package web

import (
	"github.com/rdmalab/rdmalab/web/instructor"
	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/views"
)

// ui are the server's UI texts: the page base's core texts, every learner
// feature's own table (declared in the feature's file) and the instructor
// area's (instructor.Tables), merged in the one list here, so both
// audiences' pages share one set (the area renders with it too). Every key
// must exist in every language (TestStringsComplete); a key defined twice
// panics at start-up.
var ui = page.NewStrings(append([]page.Table{
	bodyLimitStrings, commandStrings, joinStrings, labStrings, meStrings, needsStrings,
	quizStrings, rateLimitStrings, runStrings, stepStrings,
	taskStrings, terminalStrings, termSetupStrings, visualStrings, writeGuardStrings,
	labClassStrings, programStrings, ltiStrings, gradedStrings, boardStrings,
}, instructor.Tables...)...)

// tr returns the translator for lang (zh when lang is unknown).
func tr(lang string) views.Tr { return ui.Tr(lang) }

// trf formats the string key with args.
func trf(lang, key string, args ...any) string { return ui.Trf(lang, key, args...) }

// UIText is the lab's UI string key in lang (for commands that print
// what the pages say, as `labserver lti urls` does).
func UIText(lang, key string) string { return tr(lang)(key) }
