// Package e2e holds rdmalab's browser tests: they build the real labserver,
// start it on a free loopback port with a temporary database, and drive
// Debian's headless Chromium through it with chromedp (learner flows,
// the interactive visuals of lesson 01, keyboard, contrast and small-screen
// checks). The package has no non-test code besides this comment.
package e2e
