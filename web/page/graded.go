package page

import (
	"time"

	"github.com/rdmalab/rdmalab/quiz"
	"github.com/rdmalab/rdmalab/store"
)

// Graded mode as both audiences show it: the learner's lesson page and
// the instructor's settings, gradebook and exports read a stored setting
// by the same rules and say its dates the same way.

// GradedRules is a stored setting as quiz's rules.
func GradedRules(g store.GradedLesson) quiz.Graded {
	return quiz.Graded{Opens: g.Opens, Closes: g.Closes, Limit: g.Limit, Counts: quiz.Counts(g.Counts)}
}

// ZoneOf is the class's time zone (UTC when the name no longer loads).
func ZoneOf(name string) *time.Location {
	if loc, err := time.LoadLocation(name); err == nil {
		return loc
	}
	return time.UTC
}

// ZoneTime says t in the class's zone with the zone's name and UTC offset,
// in lang: "2026-12-08 18:00 (Asia/Shanghai, UTC+08:00)", zh with zh
// brackets and comma.
func ZoneTime(lang string, t time.Time, loc *time.Location) string {
	lt := t.In(loc)
	off := lt.Format("-07:00")
	if off == "+00:00" || off == "-00:00" {
		off = "+00:00"
	}
	name := loc.String()
	if lang == "zh" {
		return lt.Format("2006-01-02 15:04") + "（" + name + "，UTC" + off + "）"
	}
	return lt.Format("2006-01-02 15:04") + " (" + name + ", UTC" + off + ")"
}

// TimeRFC3339 is t in UTC as RFC 3339, as the CSV exports and the JSON
// answers carry times ("" when zero).
func TimeRFC3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
