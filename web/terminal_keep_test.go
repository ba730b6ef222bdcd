package web

import (
	"regexp"
	"testing"
	"time"
)

// What a learner is told about their kept machine exists in zh and en,
// written in each (no Latin letters in the zh text), for every note the
// vm package gives; nothing for none.
func TestKeptText(t *testing.T) {
	latin := regexp.MustCompile(`[A-Za-z]`)
	for _, note := range []string{"restored", "unreadable", "too-big", "stale", "evicted"} {
		zh, en := keptText("zh", note), keptText("en", note)
		if zh == "" || en == "" || zh == en {
			t.Errorf("%s: zh %q, en %q", note, zh, en)
		}
		if latin.MatchString(zh) {
			t.Errorf("%s: English in the zh text %q", note, zh)
		}
	}
	if got := keptText("en", ""); got != "" {
		t.Errorf("nothing kept: %q", got)
	}
	for _, tc := range []struct {
		d      time.Duration
		zh, en string
	}{
		{7 * 24 * time.Hour, "7 天", "7 days"},
		{24 * time.Hour, "1 天", "a day"},
		{3 * time.Hour, "3 小时", "3 hours"},
		{20 * time.Minute, "1 小时", "an hour"},
	} {
		if zh, en := keepSpan("zh", tc.d), keepSpan("en", tc.d); zh != tc.zh || en != tc.en {
			t.Errorf("%s: %q / %q, want %q / %q", tc.d, zh, en, tc.zh, tc.en)
		}
	}
}
