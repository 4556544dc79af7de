package encode

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"
)

// AppendJSON appends obj as JSON to dst: byte for byte what
// encoding/json.Marshal(obj) writes (keys sorted, <, > and & escaped),
// without its reflection. The JSON-shaped values of an unstructured object
// (map[string]any, []any, strings, bools, nil, integers and floats) are
// written here; anything else goes to json.Marshal, so the result, error
// included, is always json.Marshal's.
func AppendJSON(dst []byte, obj map[string]any) ([]byte, error) {
	e := encoders.Get().(*jsonEncoder)
	b, ok := e.value(dst, obj)
	e.keys = e.keys[:0]
	encoders.Put(e)
	if ok {
		return b, nil
	}
	j, err := json.Marshal(obj)
	if err != nil {
		return dst, err
	}
	return append(dst, j...), nil
}

// jsonEncoder holds the keys of the maps being written, each map's after
// its parent's: one slice for a whole object, not an array on the stack
// of each level, which made the goroutine that hashes an object grow its
// stack (runtime.copystack was 7% of a 1,000-cluster no-op's CPU).
type jsonEncoder struct{ keys []string }

var encoders = sync.Pool{New: func() any { return &jsonEncoder{keys: make([]string, 0, 256)} }}

// value appends v, or reports false for a value it leaves to
// json.Marshal.
func (e *jsonEncoder) value(b []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case map[string]any:
		if v == nil {
			return append(b, "null"...), true
		}
		start := len(e.keys)
		for k := range v {
			e.keys = append(e.keys, k)
		}
		keys := e.keys[start:] // kept if a child's keys move e.keys
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			var ok bool
			if b, ok = e.value(b, v[k]); !ok {
				return b, false
			}
		}
		e.keys = e.keys[:start] // a failure leaves them to AppendJSON
		return append(b, '}'), true
	case []any:
		if v == nil {
			return append(b, "null"...), true
		}
		b = append(b, '[')
		for i, item := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = e.value(b, item); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	case string:
		return appendJSONString(b, v), true
	case bool:
		return strconv.AppendBool(b, v), true
	case nil:
		return append(b, "null"...), true
	case int64:
		return strconv.AppendInt(b, v, 10), true
	case int:
		return strconv.AppendInt(b, int64(v), 10), true
	case int32:
		return strconv.AppendInt(b, int64(v), 10), true
	case uint64:
		return strconv.AppendUint(b, v, 10), true
	case uint32:
		return strconv.AppendUint(b, uint64(v), 10), true
	case float64:
		return appendJSONFloat(b, v, 64)
	case float32:
		return appendJSONFloat(b, float64(v), 32)
	}
	return b, false
}

// appendJSONFloat is encoding/json's floatEncoder; NaN and infinities
// are not JSON (false).
func appendJSONFloat(b []byte, f float64, bits int) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, false
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		// clean up e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

// appendJSONString is encoding/json's appendString with HTML escaping.
func appendJSONString(dst []byte, src string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(src); {
		if b := src[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, src[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(src[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, src[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, src[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, src[start:]...)
	return append(dst, '"')
}
