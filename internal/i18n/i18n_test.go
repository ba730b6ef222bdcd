package i18n

import (
	"encoding/json"
	"testing"
)

func TestGetFallback(t *testing.T) {
	cases := []struct {
		t    Text
		lang string
		want string
	}{
		{Text{"zh": "中", "en": "E"}, "zh", "中"},
		{Text{"zh": "中", "en": "E"}, "en", "E"},
		{Text{"zh": "", "en": "E"}, "zh", "E"},  // empty counts as missing
		{Text{"en": "E"}, "zh", "E"},            // then English
		{Text{"zh": "中"}, "en", "中"},            // then any
		{Text{"zh": "中", "fr": "F"}, "de", "F"}, // any, in code order
		{Text{"zh": "中", "en": "E"}, "fr", "E"}, // unknown language: English
		{Text{"zh": "", "en": ""}, "zh", ""},
		{nil, "zh", ""},
	}
	for _, c := range cases {
		if got := c.t.Get(c.lang); got != c.want {
			t.Errorf("%v.Get(%q) = %q, want %q", c.t, c.lang, got, c.want)
		}
	}
}

// The encoding is the one stored runs and lesson files hold.
func TestJSONShape(t *testing.T) {
	b, err := json.Marshal(Text{"zh": "中", "en": "E"})
	if err != nil || string(b) != `{"en":"E","zh":"中"}` {
		t.Fatalf("Marshal = %s, %v", b, err)
	}
	var back Text
	if err := json.Unmarshal([]byte(`{"en":"E","zh":"中"}`), &back); err != nil || back.Get("zh") != "中" {
		t.Fatalf("Unmarshal = %v, %v", back, err)
	}
}
