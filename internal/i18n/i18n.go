// Package i18n holds Text, the one localized-text type: a string per
// language code, shared by quiz content, experiment descriptions and events,
// and the web pages that show them.
package i18n

import "sort"

// Text is a string per language code ("zh", "en"). It encodes as a plain
// JSON/YAML object ({"en": …, "zh": …}), the form stored runs and lesson
// files hold.
type Text map[string]string

// Get returns the text in lang. The fallback rule, the one used everywhere a
// localized text is shown: the requested language, then English, then any
// other language that has a text (in code order, so the pick is stable).
// Empty strings count as missing. Get on a nil Text is "".
func (t Text) Get(lang string) string {
	if s := t[lang]; s != "" {
		return s
	}
	if s := t["en"]; s != "" {
		return s
	}
	if len(t) == 0 {
		return ""
	}
	keys := make([]string, 0, len(t))
	for k, s := range t {
		if s != "" {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	sort.Strings(keys)
	return t[keys[0]]
}
