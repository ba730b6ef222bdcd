package views

import (
	"strconv"

	"github.com/rdmalab/rdmalab/lessons"
)

func itoa(n int) string { return strconv.Itoa(n) }

// pad2 shows lesson numbers as 01, 02… like the folder names.
func pad2(n int) string {
	if n >= 0 && n < 10 {
		return "0" + strconv.Itoa(n)
	}
	return strconv.Itoa(n)
}

func htmlLang(lang string) string {
	if lang == "zh" {
		return "zh-CN"
	}
	return lang
}

// contentLang is the language the page text is written in (a fallback page
// is shown for another language than its own).
func contentLang(p *lessons.Page) string {
	if p.SourceLang != "" {
		return p.SourceLang
	}
	return p.Lang
}
