package instructor

import (
	"testing"
	"time"
)

func TestLoginDelayGrows(t *testing.T) {
	for n, want := range map[int]time.Duration{0: 0, 2: 0, 3: time.Second, 4: 2 * time.Second, 7: 16 * time.Second, 8: LoginMaxDelay, 1000: LoginMaxDelay} {
		if got := loginDelay(n); got != want {
			t.Errorf("loginDelay(%d) = %v, want %v", n, got, want)
		}
	}
}

func TestSafeNext(t *testing.T) {
	for in, want := range map[string]string{
		"":                             "/instructor",
		"/instructor":                  "/instructor",
		"/instructor/export/runs.csv":  "/instructor/export/runs.csv",
		"/instructor?lang=en":          "/instructor?lang=en",
		"//evil.example/instructor":    "/instructor",
		"https://evil.example":         "/instructor",
		"/instructor//evil.example":    "/instructor",
		`/instructor/\evil`:            "/instructor",
		"/instructorx":                 "/instructor",
		"/instructor/login?next=/evil": "/instructor",
		"/lessons/01-alpha":            "/instructor",
		"/instructor/../../evil":       "/instructor",
		"/instructor/./export":         "/instructor",
		"/instructor/%2e%2e/evil":      "/instructor", // browsers resolve %2e%2e as ..
		"/instructor/%2E%2e/%2e%2e/x":  "/instructor",
		"/instructor/export/":          "/instructor",
	} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}
