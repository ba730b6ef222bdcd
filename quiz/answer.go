package quiz

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/rdmalab/rdmalab/internal/textclip"
	"strings"
)

// DecodeAnswer reads the JSON "answer" of an attempt for q:
//
//	single  "copies"
//	multi   ["copies", "stack"]      (a non-empty set)
//	numeric 12.5
//	order   ["a", "b", "c"]          (every step exactly once)
//
// Anything else is an *AnswerError, so a stored answer always names real
// options and can be re-graded later.
func DecodeAnswer(q *Question, raw json.RawMessage) (Answer, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return Answer{}, answerErr(q, AnswerMissing, "", "no answer given")
	}
	switch q.Type {
	case Single:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return Answer{}, answerErr(q, AnswerWrongType, "", "a single-choice answer is one option id (a JSON string)")
		}
		return checkSingle(q, s)
	case Multi, Order:
		var ids []string
		if err := json.Unmarshal(raw, &ids); err != nil {
			return Answer{}, answerErr(q, AnswerWrongType, "", fmt.Sprintf("a %s answer is a list of option ids (a JSON array of strings)", q.Type))
		}
		return checkList(q, ids)
	case Numeric:
		var f float64
		if err := json.Unmarshal(raw, &f); err == nil {
			return Answer{Number: f}, nil
		}
		// quiz.js sends what the learner typed as text when JavaScript's
		// Number() cannot read it (12,5 or ６４): read it as the form does.
		var text string
		if err := json.Unmarshal(raw, &text); err == nil {
			if f, ok := ParseNumber(text); ok {
				return Answer{Number: f}, nil
			}
		}
		return Answer{}, answerErr(q, AnswerNotANumber, "", "a numeric answer is a JSON number")
	}
	return Answer{}, answerErr(q, AnswerWrongType, "", fmt.Sprintf("question type %q takes no answers", q.Type))
}

// FormAnswer reads the values of the repeated form field "answer" (the
// no-JavaScript path): one option id for single, the checked ids for multi,
// one number for numeric, and for order the step chosen at each position, in
// position order. It enforces the same rules as DecodeAnswer.
func FormAnswer(q *Question, values []string) (Answer, error) {
	switch q.Type {
	case Single:
		switch len(values) {
		case 0:
			return Answer{}, answerErr(q, AnswerMissing, "", "no option chosen")
		case 1:
			return checkSingle(q, values[0])
		}
		return Answer{}, answerErr(q, AnswerWrongType, "", "a single-choice question takes exactly one option")
	case Multi:
		return checkList(q, values)
	case Order:
		for _, v := range values {
			if v == "" {
				return Answer{}, answerErr(q, AnswerIncomplete, "", "choose a step for every position")
			}
		}
		return checkList(q, values)
	case Numeric:
		if len(values) == 0 || strings.TrimSpace(values[0]) == "" {
			return Answer{}, answerErr(q, AnswerMissing, "", "no number given")
		}
		if len(values) > 1 {
			return Answer{}, answerErr(q, AnswerWrongType, "", "a numeric question takes exactly one number")
		}
		f, ok := ParseNumber(values[0])
		if !ok {
			return Answer{}, answerErr(q, AnswerNotANumber, "", fmt.Sprintf("%q is not a number", textclip.Runes(values[0], 40)))
		}
		return Answer{Number: f}, nil
	}
	return Answer{}, answerErr(q, AnswerWrongType, "", fmt.Sprintf("question type %q takes no answers", q.Type))
}

func checkSingle(q *Question, id string) (Answer, error) {
	if id == "" {
		return Answer{}, answerErr(q, AnswerMissing, "", "no option chosen")
	}
	if q.option(id) == nil {
		return Answer{}, answerErr(q, AnswerUnknownOption, id, fmt.Sprintf("unknown option %q", textclip.Runes(id, 40)))
	}
	return Answer{Choice: id}, nil
}

// checkList validates a multi set or an order sequence.
func checkList(q *Question, ids []string) (Answer, error) {
	if len(ids) == 0 {
		if q.Type == Order {
			return Answer{}, answerErr(q, AnswerIncomplete, "", "choose a step for every position")
		}
		return Answer{}, answerErr(q, AnswerMissing, "", "no option chosen")
	}
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if id == "" { // an unset select or checkbox value, not an option name
			if q.Type == Order {
				return Answer{}, answerErr(q, AnswerIncomplete, "", "choose a step for every position")
			}
			return Answer{}, answerErr(q, AnswerMissing, "", "empty option id")
		}
		if q.option(id) == nil {
			return Answer{}, answerErr(q, AnswerUnknownOption, id, fmt.Sprintf("unknown option %q", textclip.Runes(id, 40)))
		}
		if seen[id] {
			return Answer{}, answerErr(q, AnswerDuplicate, id, fmt.Sprintf("option %q given twice", id))
		}
		seen[id] = true
	}
	if q.Type == Order && len(ids) != len(q.Options) {
		return Answer{}, answerErr(q, AnswerIncomplete, "", fmt.Sprintf("place all %d steps, got %d", len(q.Options), len(ids)))
	}
	return Answer{Choices: ids}, nil
}

func answerErr(q *Question, kind AnswerErrorKind, option, msg string) *AnswerError {
	return &AnswerError{QuestionID: q.ID, Kind: kind, Option: textclip.Runes(option, 40), Message: msg}
}

// EncodeAnswer is the JSON form of a for q, the same shape DecodeAnswer
// reads; the store keeps it so an attempt can be shown and re-graded later.
func EncodeAnswer(q *Question, a Answer) json.RawMessage {
	var v any
	switch q.Type {
	case Single:
		v = a.Choice
	case Multi, Order:
		v = a.Choices
		if a.Choices == nil {
			v = []string{}
		}
	case Numeric:
		v = a.Number
	}
	b, err := json.Marshal(v)
	if err != nil { // only a NaN/Inf number, which DecodeAnswer never returns
		return json.RawMessage("null")
	}
	return b
}

// StoredAnswer reads an answer written by EncodeAnswer by its JSON shape
// alone (string, list or number), without validating it against a question:
// stored attempts stay readable after an author edits or removes options.
func StoredAnswer(raw json.RawMessage) Answer {
	var a Answer
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return a
	}
	switch raw[0] {
	case '"':
		_ = json.Unmarshal(raw, &a.Choice)
	case '[':
		_ = json.Unmarshal(raw, &a.Choices)
	default:
		_ = json.Unmarshal(raw, &a.Number)
	}
	return a
}
