package quiz

import (
	"encoding/json"
	"errors"
	"testing"
)

// FuzzParse: any input yields either findings or a Set whose questions obey
// the rules Parse promises, and the answer key built from a clean Set grades
// as correct. Seeds: testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		set, err := Parse("fuzz.yaml", data)
		var fe FileErrors
		if err != nil && !errors.As(err, &fe) {
			t.Fatalf("error of type %T: %v", err, err)
		}
		for _, e := range fe {
			if e.File != "fuzz.yaml" || e.Message == "" {
				t.Fatalf("bad finding %+v", e)
			}
		}
		if set == nil || fe.HasErrors() {
			return
		}
		for _, q := range set.Questions {
			if r := Grade(q, answerKey(q), "en"); !r.Correct {
				t.Fatalf("%s: the answer key grades wrong: %+v", q.ID, r)
			}
			if _, err := DecodeAnswer(q, EncodeAnswer(q, answerKey(q))); err != nil {
				t.Fatalf("%s: the answer key does not decode: %v", q.ID, err)
			}
		}
	})
}

// answerKey is the correct answer of a valid question.
func answerKey(q *Question) Answer {
	var a Answer
	for _, o := range q.Options {
		switch {
		case q.Type == Order:
			a.Choices = append(a.Choices, o.ID)
		case o.Correct && q.Type == Single:
			a.Choice = o.ID
		case o.Correct:
			a.Choices = append(a.Choices, o.ID)
		}
	}
	a.Number = q.Value
	return a
}

// FuzzDecodeAnswer: a raw answer is either rejected with *AnswerError or
// decodes to something that grades without panicking and survives the
// store's round trip. Seeds: testdata/fuzz/FuzzDecodeAnswer.
func FuzzDecodeAnswer(f *testing.F) {
	qs := fixture(f)
	names := []string{"pick-one", "pick-many", "number", "steps"}
	f.Fuzz(func(t *testing.T, which uint8, raw []byte) {
		q := qs[names[int(which)%len(names)]]
		a, err := DecodeAnswer(q, json.RawMessage(raw))
		if err != nil {
			var ae *AnswerError
			if !errors.As(err, &ae) || ae.QuestionID != q.ID {
				t.Fatalf("error %T %v, want *AnswerError", err, err)
			}
			return
		}
		r := Grade(q, a, "zh")
		if q.Type != Numeric && len(r.Options) != len(q.Options) {
			t.Fatalf("%d option results for %d options", len(r.Options), len(q.Options))
		}
		again, err := DecodeAnswer(q, EncodeAnswer(q, a))
		if err != nil {
			t.Fatalf("re-decoding %s: %v", EncodeAnswer(q, a), err)
		}
		if Grade(q, again, "zh").Correct != r.Correct {
			t.Fatal("the stored answer grades differently")
		}
	})
}
