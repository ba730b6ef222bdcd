package quiz

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

// fixture returns the questions of testdata/valid.yaml by id suffix
// ("pick-one", "pick-many", "number", "steps").
func fixture(t testing.TB) map[string]*Question {
	t.Helper()
	data, err := os.ReadFile("testdata/valid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	set, err := Parse("valid.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]*Question{}
	for _, q := range set.Questions {
		m[strings.TrimPrefix(q.ID, "demo/")] = q
	}
	return m
}

// opt describes one expected OptionResult compactly: "id" plus flags
// c=chosen, k=correct, f=has feedback, e.g. "a:ckf".
func opts(results []OptionResult) []string {
	var out []string
	for _, o := range results {
		s := o.ID + ":"
		if o.Chosen {
			s += "c"
		}
		if o.Correct {
			s += "k"
		}
		if o.Feedback != "" {
			s += "f"
		}
		out = append(out, s)
	}
	return out
}

func TestGrade(t *testing.T) {
	qs := fixture(t)
	tests := []struct {
		name    string
		q       string
		a       Answer
		correct bool
		options []string
	}{
		// single: feedback on the chosen option and on the correct one if missed.
		{"single right", "pick-one", Answer{Choice: "a"}, true, []string{"a:ckf", "b:", "c:"}},
		{"single wrong", "pick-one", Answer{Choice: "b"}, false, []string{"a:kf", "b:cf", "c:"}},
		{"single wrong no feedback", "pick-one", Answer{Choice: "c"}, false, []string{"a:kf", "b:", "c:c"}},
		{"single empty", "pick-one", Answer{}, false, []string{"a:kf", "b:", "c:"}},
		{"single unknown", "pick-one", Answer{Choice: "zzz"}, false, []string{"a:kf", "b:", "c:"}},

		// multi: all or nothing, feedback on every chosen and every missed correct option.
		{"multi right", "pick-many", Answer{Choices: []string{"a", "b"}}, true, []string{"a:ckf", "b:ckf", "c:", "d:"}},
		{"multi right any order", "pick-many", Answer{Choices: []string{"b", "a"}}, true, []string{"a:ckf", "b:ckf", "c:", "d:"}},
		{"multi missing one", "pick-many", Answer{Choices: []string{"a"}}, false, []string{"a:ckf", "b:kf", "c:", "d:"}},
		{"multi extra wrong", "pick-many", Answer{Choices: []string{"a", "b", "d"}}, false, []string{"a:ckf", "b:ckf", "c:", "d:cf"}},
		{"multi all", "pick-many", Answer{Choices: []string{"a", "b", "c", "d"}}, false, []string{"a:ckf", "b:ckf", "c:cf", "d:cf"}},
		{"multi only wrong", "pick-many", Answer{Choices: []string{"c"}}, false, []string{"a:kf", "b:kf", "c:cf", "d:"}},
		{"multi empty", "pick-many", Answer{}, false, []string{"a:kf", "b:kf", "c:", "d:"}},
		{"multi with unknown", "pick-many", Answer{Choices: []string{"a", "b", "zzz"}}, false, []string{"a:ckf", "b:ckf", "c:", "d:"}},

		// numeric: tolerance bounds are inclusive (12.5 ± 0.1).
		{"numeric exact", "number", Answer{Number: 12.5}, true, nil},
		{"numeric lower bound", "number", Answer{Number: 12.4}, true, nil},
		{"numeric upper bound", "number", Answer{Number: 12.6}, true, nil},
		{"numeric inside", "number", Answer{Number: 12.55}, true, nil},
		{"numeric below", "number", Answer{Number: 12.39}, false, nil},
		{"numeric above", "number", Answer{Number: 12.61}, false, nil},
		{"numeric bits not bytes", "number", Answer{Number: 100}, false, nil},
		{"numeric zero", "number", Answer{}, false, nil},
		{"numeric negative", "number", Answer{Number: -12.5}, false, nil},

		// order: exact sequence; feedback on misplaced and missing steps.
		{"order right", "steps", Answer{Choices: []string{"first", "second", "third"}}, true, []string{"first:ck", "second:ck", "third:ck"}},
		{"order swapped", "steps", Answer{Choices: []string{"second", "first", "third"}}, false, []string{"second:c", "first:cf", "third:ck"}},
		{"order missing", "steps", Answer{Choices: []string{"first", "second"}}, false, []string{"first:ck", "second:ck", "third:"}},
		{"order missing with feedback", "steps", Answer{Choices: []string{"second", "third"}}, false, []string{"second:c", "third:c", "first:f"}},
		{"order extra", "steps", Answer{Choices: []string{"first", "second", "third", "zzz"}}, false, []string{"first:ck", "second:ck", "third:ck"}},
		{"order duplicate", "steps", Answer{Choices: []string{"first", "first", "third"}}, false, []string{"first:ck", "third:ck", "second:"}},
		{"order empty", "steps", Answer{}, false, []string{"first:f", "second:", "third:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := qs[tt.q]
			r := Grade(q, tt.a, "en")
			if r.Correct != tt.correct {
				t.Errorf("Correct = %v, want %v", r.Correct, tt.correct)
			}
			if got := opts(r.Options); !slices.Equal(got, tt.options) {
				t.Errorf("options = %v\nwant      %v", got, tt.options)
			}
			if r.Explanation != q.Explanation["en"] {
				t.Errorf("explanation = %q", r.Explanation)
			}
			if r.Options == nil {
				t.Error("Options is nil; the JSON body must carry [] not null")
			}
		})
	}
}

func TestGradeLanguage(t *testing.T) {
	q := fixture(t)["pick-one"]
	zh := Grade(q, Answer{Choice: "b"}, "zh")
	if zh.Explanation != "因为甲。" || zh.Options[1].Feedback != "错" || zh.Options[0].Feedback != "对" {
		t.Errorf("zh result = %+v", zh)
	}
	// An unknown language falls back to English (i18n.Text's one rule; the
	// web layer only ever asks for zh or en).
	if r := Grade(q, Answer{Choice: "b"}, "fr"); r.Explanation != "Because A." {
		t.Errorf("fallback explanation = %q", r.Explanation)
	}
	b, err := json.Marshal(Grade(fixture(t)["number"], Answer{Number: 12.5}, "en"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"correct":true,"options":[],"explanation":"100 / 8 = 12.5"}`; string(b) != want {
		t.Errorf("JSON = %s\nwant   %s", b, want)
	}
}

func TestGradeZeroTolerance(t *testing.T) {
	q := &Question{ID: "z", Type: Numeric, Value: 3, Tolerance: 0}
	for _, c := range []struct {
		n    float64
		want bool
	}{{3, true}, {3.0000001, false}, {2.9999999, false}} {
		if got := Grade(q, Answer{Number: c.n}, "en").Correct; got != c.want {
			t.Errorf("%v: correct = %v, want %v", c.n, got, c.want)
		}
	}
}

func TestDecodeAnswer(t *testing.T) {
	qs := fixture(t)
	tests := []struct {
		q    string
		raw  string
		want Answer
		kind AnswerErrorKind
	}{
		{"pick-one", `"a"`, Answer{Choice: "a"}, ""},
		{"pick-one", ` "b" `, Answer{Choice: "b"}, ""},
		{"pick-one", `"zzz"`, Answer{}, AnswerUnknownOption},
		{"pick-one", `""`, Answer{}, AnswerMissing},
		{"pick-one", `["a"]`, Answer{}, AnswerWrongType},
		{"pick-one", `1`, Answer{}, AnswerWrongType},
		{"pick-one", ``, Answer{}, AnswerMissing},
		{"pick-one", `null`, Answer{}, AnswerMissing},
		{"pick-many", `["a","b"]`, Answer{Choices: []string{"a", "b"}}, ""},
		{"pick-many", `["c"]`, Answer{Choices: []string{"c"}}, ""},
		{"pick-many", `[]`, Answer{}, AnswerMissing},
		{"pick-many", `["a","a"]`, Answer{}, AnswerDuplicate},
		{"pick-many", `["a","x"]`, Answer{}, AnswerUnknownOption},
		{"pick-many", `"a"`, Answer{}, AnswerWrongType},
		{"pick-many", `[1,2]`, Answer{}, AnswerWrongType},
		{"pick-many", `{"a":true}`, Answer{}, AnswerWrongType},
		{"number", `12.5`, Answer{Number: 12.5}, ""},
		{"number", `-3e2`, Answer{Number: -300}, ""},
		{"number", `0`, Answer{Number: 0}, ""},
		{"number", `"twelve"`, Answer{}, AnswerNotANumber}, // a number as text is read as the form reads it (TestParseNumber)
		{"number", `1e400`, Answer{}, AnswerNotANumber},
		{"number", `[12.5]`, Answer{}, AnswerNotANumber},
		{"steps", `["first","second","third"]`, Answer{Choices: []string{"first", "second", "third"}}, ""},
		{"steps", `["third","first","second"]`, Answer{Choices: []string{"third", "first", "second"}}, ""},
		{"steps", `["first","second"]`, Answer{}, AnswerIncomplete},
		{"steps", `["first","second","third","first"]`, Answer{}, AnswerDuplicate},
		{"steps", `["first","second","fourth"]`, Answer{}, AnswerUnknownOption},
		{"steps", `[]`, Answer{}, AnswerIncomplete},
		{"steps", `"first"`, Answer{}, AnswerWrongType},
		{"steps", `["first","","third"]`, Answer{}, AnswerIncomplete},
		{"pick-many", `["a",""]`, Answer{}, AnswerMissing},
	}
	for _, tt := range tests {
		t.Run(tt.q+" "+tt.raw, func(t *testing.T) {
			q := qs[tt.q]
			got, err := DecodeAnswer(q, json.RawMessage(tt.raw))
			checkAnswer(t, q, got, err, tt.want, tt.kind)
		})
	}
}

func TestFormAnswer(t *testing.T) {
	qs := fixture(t)
	tests := []struct {
		q      string
		values []string
		want   Answer
		kind   AnswerErrorKind
	}{
		{"pick-one", []string{"a"}, Answer{Choice: "a"}, ""},
		{"pick-one", nil, Answer{}, AnswerMissing},
		{"pick-one", []string{""}, Answer{}, AnswerMissing},
		{"pick-one", []string{"a", "b"}, Answer{}, AnswerWrongType},
		{"pick-one", []string{"nope"}, Answer{}, AnswerUnknownOption},
		{"pick-many", []string{"a", "c"}, Answer{Choices: []string{"a", "c"}}, ""},
		{"pick-many", nil, Answer{}, AnswerMissing},
		{"pick-many", []string{"a", "a"}, Answer{}, AnswerDuplicate},
		{"number", []string{" 12.5 "}, Answer{Number: 12.5}, ""},
		{"number", []string{"1e1"}, Answer{Number: 10}, ""},
		{"number", []string{""}, Answer{}, AnswerMissing},
		{"number", nil, Answer{}, AnswerMissing},
		{"number", []string{"twelve"}, Answer{}, AnswerNotANumber},
		{"number", []string{"NaN"}, Answer{}, AnswerNotANumber},
		{"number", []string{"Inf"}, Answer{}, AnswerNotANumber},
		{"number", []string{"1", "2"}, Answer{}, AnswerWrongType},
		{"steps", []string{"second", "first", "third"}, Answer{Choices: []string{"second", "first", "third"}}, ""},
		{"steps", []string{"second", "", "third"}, Answer{}, AnswerIncomplete},
		{"steps", []string{"second", "second", "third"}, Answer{}, AnswerDuplicate},
		{"steps", nil, Answer{}, AnswerIncomplete},
	}
	for _, tt := range tests {
		t.Run(tt.q+" "+strings.Join(tt.values, ","), func(t *testing.T) {
			q := qs[tt.q]
			got, err := FormAnswer(q, tt.values)
			checkAnswer(t, q, got, err, tt.want, tt.kind)
		})
	}
}

func checkAnswer(t *testing.T, q *Question, got Answer, err error, want Answer, kind AnswerErrorKind) {
	t.Helper()
	if kind != "" {
		var ae *AnswerError
		if !errors.As(err, &ae) {
			t.Fatalf("err = %v (%T), want *AnswerError %s", err, err, kind)
		}
		if ae.Kind != kind || ae.QuestionID != q.ID || ae.Message == "" {
			t.Errorf("AnswerError = %+v, want kind %s", ae, kind)
		}
		return
	}
	if err != nil {
		t.Fatalf("err = %v", err)
	}
	if got.Choice != want.Choice || got.Number != want.Number || !slices.Equal(got.Choices, want.Choices) {
		t.Errorf("answer = %+v, want %+v", got, want)
	}
	// What is stored reads back the same and still decodes.
	raw := EncodeAnswer(q, got)
	back := StoredAnswer(raw)
	if back.Choice != got.Choice || back.Number != got.Number || !slices.Equal(back.Choices, got.Choices) {
		t.Errorf("stored %s reads back as %+v", raw, back)
	}
	if _, err := DecodeAnswer(q, raw); err != nil {
		t.Errorf("stored %s does not decode: %v", raw, err)
	}
}

func TestDisplayOptions(t *testing.T) {
	qs := fixture(t)
	ids := func(os []Option) string {
		var s []string
		for _, o := range os {
			s = append(s, o.ID)
		}
		return strings.Join(s, ",")
	}
	if got := ids(qs["pick-many"].DisplayOptions()); got != "a,b,c,d" {
		t.Errorf("choices reordered: %s", got)
	}
	steps := qs["steps"]
	shown := steps.DisplayOptions()
	if ids(shown) == ids(steps.Options) {
		t.Errorf("order steps shown in the answer order %s", ids(shown))
	}
	if ids(steps.DisplayOptions()) != ids(shown) {
		t.Error("display order is not stable between calls")
	}
	if ids(steps.Options) != "first,second,third" {
		t.Errorf("DisplayOptions changed the question: %s", ids(steps.Options))
	}
	// Across many ids the answer order never shows, and every step stays present.
	for _, id := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"} {
		q := &Question{ID: id, Type: Order, Options: []Option{{ID: "1"}, {ID: "2"}}}
		got := q.DisplayOptions()
		if ids(got) != "2,1" {
			t.Errorf("%s: two steps shown as %s", id, ids(got))
		}
	}
}

// TestParseNumber (issue 29 item 10): a Chinese input method's full-width
// digits and a decimal comma are numbers; an ambiguous comma is not.
func TestParseNumber(t *testing.T) {
	for in, want := range map[string]float64{
		"12.5": 12.5, " 64 ": 64, "６４": 64, "１２．５": 12.5, "－３": -3, "\u22123": -3,
		"12,5": 12.5, "１２，５": 12.5, "0,25": 0.25, "1e3": 1000, "\u3000６４\u3000": 64,
	} {
		if got, ok := ParseNumber(in); !ok || got != want {
			t.Errorf("ParseNumber(%q) = %v, %v; want %v", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "twelve", "1,000", "1,2,3", "1.2,5", "NaN", "Inf", "12 5"} {
		if got, ok := ParseNumber(in); ok {
			t.Errorf("ParseNumber(%q) = %v, want refused", in, got)
		}
	}
	q := &Question{ID: "x/n", Type: Numeric, Value: 12.5, Tolerance: 0.1}
	for _, raw := range []string{`"12,5"`, `"１２．５"`, `12.5`} {
		a, err := DecodeAnswer(q, json.RawMessage(raw))
		if err != nil || !Grade(q, a, "en").Correct {
			t.Errorf("DecodeAnswer(%s) = %+v, %v", raw, a, err)
		}
	}
	if a, err := FormAnswer(q, []string{"１２，５"}); err != nil || a.Number != 12.5 {
		t.Errorf("FormAnswer(１２，５) = %+v, %v", a, err)
	}
}
