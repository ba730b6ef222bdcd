package sandbox

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// ParamError says which param is wrong and what it accepts. The web layer
// turns it into a 400 whose message a learner can act on.
type ParamError struct {
	Param    string // the param's name
	Message  string // e.g. "must be between 64 B and 1 MiB (got 2 MiB)"
	Messages Text   // Message per language, for the learner
}

func (e *ParamError) Error() string {
	return fmt.Sprintf("param %q: %s", e.Param, e.Message)
}

// Validate checks raw values (decoded JSON, or strings from a form or a
// lesson directive) against the experiment's params and returns them typed:
// int64 for int and bytes, string for enum, bool for bool. Missing params
// take their default; unknown ones are an error. The first problem, in
// param order, is returned as a *ParamError.
func (e *Experiment) Validate(raw map[string]any) (Params, error) {
	known := make(map[string]bool, len(e.Params))
	for _, p := range e.Params {
		known[p.Name] = true
	}
	var unknown []string
	for k := range raw {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		names := make([]string, len(e.Params))
		for i, p := range e.Params {
			names[i] = p.Name
		}
		en := fmt.Sprintf("unknown param of %s (known: %s)", e.ID, strings.Join(names, ", "))
		zh := fmt.Sprintf("%s 没有这个参数（它的参数：%s）", e.ID, strings.Join(names, "、"))
		return nil, &ParamError{Param: unknown[0], Message: en, Messages: Text{"en": en, "zh": zh}}
	}
	out := make(Params, len(e.Params))
	for _, p := range e.Params {
		v, ok := raw[p.Name]
		if !ok || v == nil {
			v = p.Default
		}
		tv, err := p.Coerce(v)
		if err != nil {
			zh := p.BoundsText().Get("zh") + fmt.Sprintf("（收到 %v）", v)
			return nil, &ParamError{Param: p.Name, Message: err.Error(), Messages: Text{"en": err.Error(), "zh": zh}}
		}
		out[p.Name] = tv
	}
	return out, nil
}

// Defaults returns the experiment's default params.
func (e *Experiment) Defaults() Params {
	p, err := e.Validate(nil)
	if err != nil { // checked at Register
		panic(err)
	}
	return p
}

// Coerce converts one raw value to the param's Go type and checks it
// against the param's bounds or choices.
func (p *Param) Coerce(v any) (any, error) {
	switch p.Kind {
	case ParamInt, ParamBytes:
		n, err := toInt(v, p.Kind == ParamBytes)
		if err != nil {
			return nil, fmt.Errorf("%v; %s", err, p.Bounds())
		}
		if n < p.Min || n > p.Max {
			return nil, fmt.Errorf("%s (got %s)", p.Bounds(), p.format(n))
		}
		return n, nil
	case ParamEnum:
		s, ok := v.(string)
		if !ok {
			if n, isNum := numberString(v); isNum {
				s = n // a directive or JSON may give 65536 for the choice "65536"
			} else {
				return nil, fmt.Errorf("want a string; %s", p.Bounds())
			}
		}
		for _, c := range p.Choices {
			if c.Value == s {
				return s, nil
			}
		}
		return nil, fmt.Errorf("%s (got %q)", p.Bounds(), s)
	case ParamBool:
		switch b := v.(type) {
		case bool:
			return b, nil
		case string:
			switch strings.ToLower(b) {
			case "true", "on", "yes", "1":
				return true, nil
			case "false", "off", "no", "0":
				return false, nil
			}
		}
		return nil, fmt.Errorf("%s (got %v)", p.Bounds(), v)
	}
	return nil, fmt.Errorf("param kind %q is not supported", p.Kind)
}

// Bounds describes what the param accepts, in English, for error messages
// and forms.
func (p *Param) Bounds() string { return p.BoundsText().Get("en") }

// BoundsText is what the param accepts in both languages (the one wording
// of Bounds and of a ParamError's Chinese message).
func (p *Param) BoundsText() Text {
	switch p.Kind {
	case ParamInt, ParamBytes:
		lo, hi := p.format(p.Min), p.format(p.Max)
		return Text{"en": fmt.Sprintf("must be between %s and %s", lo, hi), "zh": fmt.Sprintf("须在 %s 到 %s 之间", lo, hi)}
	case ParamEnum:
		vals := make([]string, len(p.Choices))
		for i, c := range p.Choices {
			vals[i] = c.Value
		}
		return Text{"en": "must be one of " + strings.Join(vals, ", "), "zh": "须是以下之一：" + strings.Join(vals, "、")}
	case ParamBool:
		return Text{"en": "must be true or false", "zh": "须是 true 或 false"}
	}
	return Text{"en": "", "zh": "类型不受支持"}
}

func (p *Param) format(n int64) string {
	if p.Kind == ParamBytes {
		return FormatBytes(n)
	}
	if p.Unit != "" {
		return fmt.Sprintf("%d %s", n, p.Unit)
	}
	return strconv.FormatInt(n, 10)
}

// FormatBytes writes n in the largest binary unit that divides it exactly
// ("64 KiB", "1 MiB"), else in bytes, so bounds read as the lesson writes them.
func FormatBytes(n int64) string {
	units := []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}
	for _, u := range units {
		if n != 0 && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%d B", n)
}

// toInt accepts JSON numbers (float64 or json.Number), Go integers and
// decimal strings; bytes also accept a binary suffix ("64KiB", "1 MiB", "4k").
func toInt(v any, bytes bool) (int64, error) {
	switch n := v.(type) {
	case int:
		return int64(n), nil
	case int64:
		return n, nil
	case int32:
		return int64(n), nil
	case float64:
		if n != math.Trunc(n) || math.Abs(n) > 1<<53 {
			return 0, fmt.Errorf("want a whole number, got %v", n)
		}
		return int64(n), nil
	case json.Number:
		return parseInt(string(n), bytes)
	case string:
		return parseInt(n, bytes)
	}
	return 0, fmt.Errorf("want a number, got %T", v)
}

func parseInt(s string, bytes bool) (int64, error) {
	orig := s
	s = strings.TrimSpace(s)
	mult := int64(1)
	if bytes {
		low := strings.ToLower(s)
		for _, u := range []struct {
			suffix string
			mult   int64
		}{{"gib", 1 << 30}, {"mib", 1 << 20}, {"kib", 1 << 10}, {"g", 1 << 30}, {"m", 1 << 20}, {"k", 1 << 10}, {"b", 1}} {
			if strings.HasSuffix(low, u.suffix) {
				s = strings.TrimSpace(s[:len(s)-len(u.suffix)])
				mult = u.mult
				break
			}
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		if bytes {
			return 0, fmt.Errorf("want a whole number of bytes, with an optional unit k/KiB, m/MiB or g/GiB (like 4KiB or 64k), got %q", orig)
		}
		return 0, fmt.Errorf("want a whole number, got %q", orig)
	}
	if n > math.MaxInt64/mult || n < math.MinInt64/mult {
		return 0, fmt.Errorf("number too large")
	}
	return n * mult, nil
}

func numberString(v any) (string, bool) {
	switch n := v.(type) {
	case float64:
		if n == math.Trunc(n) {
			return strconv.FormatInt(int64(n), 10), true
		}
		return strconv.FormatFloat(n, 'g', -1, 64), true
	case int:
		return strconv.Itoa(n), true
	case int64:
		return strconv.FormatInt(n, 10), true
	case json.Number:
		return string(n), true
	}
	return "", false
}

// checkDefinition is run by Register: names are unique, every default
// validates, enum choices exist, and every preset validates.
func (e *Experiment) checkDefinition() error {
	switch e.Sharing {
	case "", Timing, Shareable:
	default:
		return fmt.Errorf("sharing %q: want %q or %q", e.Sharing, Timing, Shareable)
	}
	seen := map[string]bool{}
	for i := range e.Params {
		p := &e.Params[i]
		if p.Name == "" || seen[p.Name] {
			return fmt.Errorf("param %d: empty or duplicate name %q", i, p.Name)
		}
		seen[p.Name] = true
		if p.Kind == ParamEnum && len(p.Choices) == 0 {
			return fmt.Errorf("param %q: enum without choices", p.Name)
		}
		if (p.Kind == ParamInt || p.Kind == ParamBytes) && p.Min > p.Max {
			return fmt.Errorf("param %q: min > max", p.Name)
		}
		if _, err := p.Coerce(p.Default); err != nil {
			return fmt.Errorf("param %q: default: %w", p.Name, err)
		}
	}
	ids := map[string]bool{}
	for _, pr := range e.Presets {
		if pr.ID == "" || ids[pr.ID] {
			return fmt.Errorf("preset: empty or duplicate id %q", pr.ID)
		}
		ids[pr.ID] = true
		if _, err := e.Validate(pr.Values); err != nil {
			return fmt.Errorf("preset %q: %w", pr.ID, err)
		}
	}
	return nil
}
