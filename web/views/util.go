package views

import "strconv"

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
