package sandbox

import (
	"errors"
	"strings"
)

// Reason is why something a learner or an admin reads about went the way it
// did — a lab that is not ready, a run that could not run or ended early —
// in both languages, written where the cause is known (the backend choice,
// the guest supervisor, the runner, the fleet), never translated afterwards.
// As an error, it reads in English (logs, wrapping).
type Reason struct {
	// Kind is a short stable name of the cause ("unavailable",
	// "guest-failed", "timed-out"…), for code that decides on it.
	Kind string
	// Text is what people read, zh and en.
	Text Text
}

// Because is a Reason of kind in English and Chinese.
func Because(kind, en, zh string) *Reason {
	return &Reason{Kind: kind, Text: Text{"en": en, "zh": zh}}
}

// Error is the English text.
func (r *Reason) Error() string { return r.Text.Get("en") }

// Detail is a fixed phrase in both languages followed by a diagnostic that
// has no translation (an error from the system, a path, a package name, a
// command): "en: detail" and "zh：detail". An empty detail leaves the
// phrase alone.
func Detail(en, zh, detail string) Text {
	if detail == "" {
		return Text{"en": en, "zh": zh}
	}
	return Text{"en": en + ": " + detail, "zh": zh + "：" + detail}
}

// JoinReasons joins reasons in their order, "; " in English and "；" in
// Chinese, skipping empty ones.
func JoinReasons(ts ...Text) Text {
	var en, zh []string
	for _, t := range ts {
		if t.Get("en") == "" {
			continue
		}
		en = append(en, t.Get("en"))
		zh = append(zh, t.Get("zh"))
	}
	if len(en) == 0 {
		return nil
	}
	return Text{"en": strings.Join(en, "; "), "zh": strings.Join(zh, "；")}
}

// FailureText is why a run failed with err, in both languages: in Chinese,
// the text of the Reason err carries (a backend or the fleet wrote it in
// both languages; English keeps any wrapping), else err as a diagnostic
// after a Chinese lead-in (an error from the agent or the system has no
// translation).
func FailureText(err error) Text {
	var r *Reason
	if errors.As(err, &r) {
		return Text{"en": err.Error(), "zh": r.Text.Get("zh")}
	}
	return Text{"en": err.Error(), "zh": "原因：" + err.Error()}
}
