package publish

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"unicode"
)

// What a registry holds reaches terminals and reports: a record's
// strings (a revision's description, who paused and why) are read with
// every control character (an escape sequence that rewrites the screen,
// a carriage return that hides what came before) and every bidirectional
// override (text that reads otherwise than it is) made U+FFFD, the
// replacement character. A signed record is one the key wrote; one of a
// delivery that does not sign is anyone's.

// Sanitized is the JSON data with every string's unsafe characters
// (Clean) replaced, its map keys too.
func Sanitized(data []byte) ([]byte, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // numbers as they were written, not float64
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("invalid JSON: more than one value")
	}
	return json.Marshal(cleanValue(v))
}

func cleanValue(v any) any {
	switch v := v.(type) {
	case string:
		return Clean(v)
	case []any:
		for i := range v {
			v[i] = cleanValue(v[i])
		}
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[Clean(k)] = cleanValue(e)
		}
		return out
	}
	return v
}

// Clean is s with every control character but newline and tab, and
// every bidirectional override or isolate, replaced by U+FFFD.
func Clean(s string) string {
	unsafe := func(r rune) bool {
		return r != '\n' && r != '\t' && unicode.IsControl(r) || r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069
	}
	if strings.IndexFunc(s, unsafe) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if unsafe(r) {
			return unicode.ReplacementChar
		}
		return r
	}, s)
}
