package encode

import (
	"errors"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"sigs.k8s.io/yaml"
)

// AppendYAML appends obj as YAML to dst: byte for byte what
// sigs.k8s.io/yaml.Marshal(obj) writes, without its detour (obj to JSON,
// JSON parsed by go-yaml v2, then written by go-yaml v2), which costs
// several times more than the render itself.
//
// It writes the JSON-shaped values an unstructured object holds
// (map[string]any, []any, strings, bools, nil, integers and floats) the way
// go-yaml v2 writes what it parsed from their JSON: keys in go-yaml's
// order, numbers as the JSON round trip turns them (an integral float is an
// integer), and each scalar in the style go-yaml's emitter (a port of
// libyaml's) picks, folded at 80 columns as it does. Anything else — another
// type, a string that is not valid UTF-8 or holds a character go-yaml's
// reader refuses, a float that JSON cannot hold — goes the old way, so the
// result, error included, is always sigs.k8s.io/yaml.Marshal's.
func AppendYAML(dst []byte, obj map[string]any) ([]byte, error) {
	e := yamlEmitter{buf: dst, indent: -1, whitespace: true, indention: true}
	if obj != nil && e.node(obj, false, false) == nil {
		// Document end: a line break unless one was just written.
		e.writeIndent()
		return e.buf, nil
	}
	y, err := yaml.Marshal(obj)
	if err != nil {
		return dst, err
	}
	return append(dst, y...), nil
}

// errSlowPath says a value is not one AppendYAML writes itself.
var errSlowPath = errors.New("not on the fast path")

// The emitter's settings, as go-yaml v2 sets them.
const (
	bestIndent = 2
	bestWidth  = 80
	// simpleKeyMax is the longest key written as "key: value"; longer keys
	// are written "? key".
	simpleKeyMax = 128
)

type scalarStyle int

const (
	plainStyle scalarStyle = iota
	singleQuotedStyle
	doubleQuotedStyle
	literalStyle
)

// yamlEmitter is the part of go-yaml v2's emitter (emitterc.go) that block
// mappings, block sequences, empty flow collections and scalars go
// through, with the same state and the same decisions.
type yamlEmitter struct {
	buf     []byte
	column  int
	indent  int
	indents []int

	whitespace bool // the last character written was a blank
	indention  bool // only indentation has been written on the line

	mappingContext   bool
	simpleKeyContext bool
}

func (e *yamlEmitter) increaseIndent(flow, indentless bool) {
	e.indents = append(e.indents, e.indent)
	if e.indent < 0 {
		if flow {
			e.indent = bestIndent
		} else {
			e.indent = 0
		}
	} else if !indentless {
		e.indent += bestIndent
	}
}

func (e *yamlEmitter) popIndent() {
	e.indent = e.indents[len(e.indents)-1]
	e.indents = e.indents[:len(e.indents)-1]
}

func (e *yamlEmitter) put(c byte) {
	e.buf = append(e.buf, c)
	e.column++
}

func (e *yamlEmitter) putBreak() {
	e.buf = append(e.buf, '\n')
	e.column = 0
}

// write copies the character at s[i] and returns the index after it.
func (e *yamlEmitter) write(s string, i int) int {
	w := width(s[i])
	e.buf = append(e.buf, s[i:i+w]...)
	e.column++
	return i + w
}

// writeBreak copies the line break at s[i].
func (e *yamlEmitter) writeBreak(s string, i int) int {
	if s[i] == '\n' {
		e.putBreak()
		return i + 1
	}
	i = e.write(s, i)
	e.column = 0
	return i
}

func (e *yamlEmitter) writeIndent() {
	indent := e.indent
	if indent < 0 {
		indent = 0
	}
	if !e.indention || e.column > indent || (e.column == indent && !e.whitespace) {
		e.putBreak()
	}
	for e.column < indent {
		e.put(' ')
	}
	e.whitespace = true
	e.indention = true
}

func (e *yamlEmitter) writeIndicator(indicator string, needWhitespace, isWhitespace, isIndention bool) {
	if needWhitespace && !e.whitespace {
		e.put(' ')
	}
	for i := 0; i < len(indicator); {
		i = e.write(indicator, i)
	}
	e.whitespace = isWhitespace
	e.indention = e.indention && isIndention
}

// node writes a value in the given context, as yaml_emitter_emit_node and
// the states it leads to do.
func (e *yamlEmitter) node(v any, mapping, simpleKey bool) error {
	e.mappingContext = mapping
	e.simpleKeyContext = simpleKey
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 0 {
			e.emptyFlow("{", "}")
			return nil
		}
		return e.blockMapping(v)
	case []any:
		if len(v) == 0 {
			e.emptyFlow("[", "]")
			return nil
		}
		return e.blockSequence(v)
	case string:
		if simple(v) && resolvesAsString(v) {
			e.writeSimple(v)
			return nil
		}
		if !readable(v) {
			return errSlowPath
		}
		return e.scalar(v, stringStyle(v))
	case bool:
		if v {
			e.writeSimple("true")
		} else {
			e.writeSimple("false")
		}
	case nil:
		e.writeSimple("null")
	// Numbers are digits, with a sign, a point or an exponent: go-yaml's
	// analysis finds nothing in them, and writes them plain as they are.
	case int64:
		e.writeNumber(strconv.AppendInt(e.space(), v, 10))
	case int:
		e.writeNumber(strconv.AppendInt(e.space(), int64(v), 10))
	case int32:
		e.writeNumber(strconv.AppendInt(e.space(), int64(v), 10))
	case uint64:
		e.writeNumber(strconv.AppendUint(e.space(), v, 10))
	case uint32:
		e.writeNumber(strconv.AppendUint(e.space(), uint64(v), 10))
	case float64:
		s, ok := floatText(v, 64)
		if !ok {
			return errSlowPath
		}
		e.writeSimple(s)
	case float32:
		s, ok := floatText(float64(v), 32)
		if !ok {
			return errSlowPath
		}
		e.writeSimple(s)
	default:
		return errSlowPath
	}
	return nil
}

// simpleByte are the characters of simple scalars.
var simpleByte = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._/-=+", byte(c)) >= 0
	}
	return t
}()

// simple tells whether go-yaml's analysis of s finds nothing: s is short
// enough to be a simple key, made of ASCII letters, digits and ._/-=+
// (no blank, no break, no indicator), and starts with a letter, a digit,
// '_' or '/'. Plain, such a scalar is written as it is in any context.
func simple(s string) bool {
	if len(s) == 0 || len(s) > simpleKeyMax {
		return false
	}
	if c := s[0]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '/') {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !simpleByte[s[i]] {
			return false
		}
	}
	return true
}

// space starts a plain scalar: a blank unless one was just written.
func (e *yamlEmitter) space() []byte {
	if !e.whitespace {
		e.put(' ')
	}
	return e.buf
}

// writeSimple writes a simple scalar (or a number) plain.
func (e *yamlEmitter) writeSimple(s string) {
	e.space()
	e.buf = append(e.buf, s...)
	e.column += len(s)
	e.whitespace, e.indention = false, false
}

// writeNumber ends a number that space began and b appended.
func (e *yamlEmitter) writeNumber(b []byte) {
	e.column += len(b) - len(e.buf)
	e.buf = b
	e.whitespace, e.indention = false, false
}

// emptyFlow writes an empty mapping or sequence, "{}" or "[]".
func (e *yamlEmitter) emptyFlow(open, close string) {
	e.writeIndicator(open, true, true, false)
	e.increaseIndent(true, false)
	e.popIndent()
	e.writeIndicator(close, false, false, false)
}

func (e *yamlEmitter) blockSequence(items []any) error {
	e.increaseIndent(false, e.mappingContext && !e.indention)
	for _, item := range items {
		e.writeIndent()
		e.writeIndicator("-", true, false, true)
		if err := e.node(item, false, false); err != nil {
			return err
		}
	}
	e.popIndent()
	return nil
}

func (e *yamlEmitter) blockMapping(m map[string]any) error {
	var small [16]string
	keys := small[:0]
	for k := range m {
		if !readable(k) {
			return errSlowPath
		}
		keys = append(keys, k)
	}
	sortKeys(keys)
	e.increaseIndent(false, false)
	for _, k := range keys {
		e.writeIndent()
		if simple(k) && resolvesAsString(k) {
			e.mappingContext, e.simpleKeyContext = true, true
			e.writeSimple(k)
			e.writeIndicator(":", false, false, false)
			if err := e.node(m[k], true, false); err != nil {
				return err
			}
			continue
		}
		a := analyze(k)
		if !a.multiline && len(k) <= simpleKeyMax {
			e.mappingContext, e.simpleKeyContext = true, true
			e.scalarAnalyzed(k, stringStyle(k), a)
			e.writeIndicator(":", false, false, false)
		} else {
			e.writeIndicator("?", true, false, true)
			e.mappingContext, e.simpleKeyContext = true, false
			e.scalarAnalyzed(k, stringStyle(k), a)
			e.writeIndent()
			e.writeIndicator(":", true, false, true)
		}
		if err := e.node(m[k], true, false); err != nil {
			return err
		}
	}
	e.popIndent()
	return nil
}

func (e *yamlEmitter) scalar(s string, style scalarStyle) error {
	e.scalarAnalyzed(s, style, analyze(s))
	return nil
}

// scalarAnalyzed writes a scalar, in the style the encoder asked for or
// the one the emitter falls back to (yaml_emitter_select_scalar_style).
func (e *yamlEmitter) scalarAnalyzed(s string, style scalarStyle, a analysis) {
	if e.simpleKeyContext && a.multiline {
		style = doubleQuotedStyle
	}
	if style == plainStyle {
		if !a.blockPlainAllowed || len(s) == 0 && e.simpleKeyContext {
			style = singleQuotedStyle
		}
	}
	if style == singleQuotedStyle && !a.singleQuotedAllowed {
		style = doubleQuotedStyle
	}
	if style == literalStyle && (!a.blockAllowed || e.simpleKeyContext) {
		style = doubleQuotedStyle
	}
	e.increaseIndent(true, false)
	switch style {
	case plainStyle:
		e.writePlain(s, !e.simpleKeyContext)
	case singleQuotedStyle:
		e.writeSingleQuoted(s, !e.simpleKeyContext)
	case doubleQuotedStyle:
		e.writeDoubleQuoted(s, !e.simpleKeyContext)
	case literalStyle:
		e.writeLiteral(s)
	}
	e.popIndent()
}

// stringStyle is the style go-yaml v2's encoder asks for a string in
// (encoder.stringv): literal for several lines, plain unless the string
// would read back as something else, else double-quoted.
func stringStyle(s string) scalarStyle {
	switch {
	case strings.Contains(s, "\n"):
		return literalStyle
	case resolvesAsString(s) && !isBase60Float(s):
		return plainStyle
	}
	return doubleQuotedStyle
}

// analysis is what yaml_emitter_analyze_scalar finds about a scalar.
type analysis struct {
	multiline           bool
	blockPlainAllowed   bool
	singleQuotedAllowed bool
	blockAllowed        bool
}

// isIndicator reports whether c, first in the scalar or not, between the
// given neighbours, is a block indicator that keeps the scalar from being
// plain.
func isIndicator(c byte, first, precededByWhitespace, followedByWhitespace bool) bool {
	if first {
		switch c {
		case '#', ',', '[', ']', '{', '}', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
			return true
		case '?', ':', '-':
			return followedByWhitespace
		}
		return false
	}
	switch c {
	case ':':
		return followedByWhitespace
	case '#':
		return precededByWhitespace
	}
	return false
}

func analyze(value string) analysis {
	if len(value) == 0 {
		return analysis{blockPlainAllowed: true, singleQuotedAllowed: true}
	}
	var (
		blockIndicators   bool
		lineBreaks        bool
		specialCharacters bool

		leadingSpace  bool
		leadingBreak  bool
		trailingSpace bool
		trailingBreak bool
		breakSpace    bool
		spaceBreak    bool

		precededByWhitespace = true
		followedByWhitespace bool
		previousSpace        bool
		previousBreak        bool
	)
	blockIndicators = len(value) >= 3 && (value[:3] == "---" || value[:3] == "...")
	for i, w := 0, 0; i < len(value); i += w {
		w = width(value[i])
		followedByWhitespace = i+w >= len(value) || isBlank(value, i+w)
		if isIndicator(value[i], i == 0, precededByWhitespace, followedByWhitespace) {
			blockIndicators = true
		}
		if !isPrintable(value, i) {
			specialCharacters = true
		}
		if value[i] == ' ' {
			if i == 0 {
				leadingSpace = true
			}
			if i+w == len(value) {
				trailingSpace = true
			}
			if previousBreak {
				breakSpace = true
			}
			previousSpace, previousBreak = true, false
		} else if isBreak(value, i) {
			lineBreaks = true
			if i == 0 {
				leadingBreak = true
			}
			if i+w == len(value) {
				trailingBreak = true
			}
			if previousSpace {
				spaceBreak = true
			}
			previousSpace, previousBreak = false, true
		} else {
			previousSpace, previousBreak = false, false
		}
		precededByWhitespace = isBlankz(value, i)
	}
	return analysis{
		multiline:           lineBreaks,
		blockPlainAllowed:   !(leadingSpace || leadingBreak || trailingSpace || trailingBreak || breakSpace || spaceBreak || specialCharacters || lineBreaks || blockIndicators),
		singleQuotedAllowed: !(breakSpace || spaceBreak || specialCharacters),
		blockAllowed:        !(trailingSpace || spaceBreak || specialCharacters),
	}
}

func (e *yamlEmitter) writePlain(value string, allowBreaks bool) {
	if !e.whitespace {
		e.put(' ')
	}
	spaces, breaks := false, false
	for i := 0; i < len(value); {
		switch {
		case value[i] == ' ':
			if allowBreaks && !spaces && e.column > bestWidth && !isSpace(value, i+1) {
				e.writeIndent()
				i++
			} else {
				i = e.write(value, i)
			}
			spaces = true
		case isBreak(value, i):
			if !breaks && value[i] == '\n' {
				e.putBreak()
			}
			i = e.writeBreak(value, i)
			e.indention = true
			breaks = true
		default:
			if breaks {
				e.writeIndent()
			}
			i = e.write(value, i)
			e.indention = false
			spaces, breaks = false, false
		}
	}
	e.whitespace = false
	e.indention = false
}

func (e *yamlEmitter) writeSingleQuoted(value string, allowBreaks bool) {
	e.writeIndicator("'", true, false, false)
	spaces, breaks := false, false
	for i := 0; i < len(value); {
		switch {
		case value[i] == ' ':
			if allowBreaks && !spaces && e.column > bestWidth && i > 0 && i < len(value)-1 && !isSpace(value, i+1) {
				e.writeIndent()
				i++
			} else {
				i = e.write(value, i)
			}
			spaces = true
		case isBreak(value, i):
			if !breaks && value[i] == '\n' {
				e.putBreak()
			}
			i = e.writeBreak(value, i)
			e.indention = true
			breaks = true
		default:
			if breaks {
				e.writeIndent()
			}
			if value[i] == '\'' {
				e.put('\'')
			}
			i = e.write(value, i)
			e.indention = false
			spaces, breaks = false, false
		}
	}
	e.writeIndicator("'", false, false, false)
	e.whitespace = false
	e.indention = false
}

func (e *yamlEmitter) writeDoubleQuoted(value string, allowBreaks bool) {
	spaces := false
	e.writeIndicator(`"`, true, false, false)
	bom := strings.HasPrefix(value, "\uFEFF")
	for i := 0; i < len(value); {
		switch {
		case !isPrintable(value, i) || bom || isBreak(value, i) || value[i] == '"' || value[i] == '\\':
			r, w := utf8.DecodeRuneInString(value[i:])
			i += w
			e.put('\\')
			switch r {
			case 0x00:
				e.put('0')
			case 0x07:
				e.put('a')
			case 0x08:
				e.put('b')
			case 0x09:
				e.put('t')
			case 0x0A:
				e.put('n')
			case 0x0b:
				e.put('v')
			case 0x0c:
				e.put('f')
			case 0x0d:
				e.put('r')
			case 0x1b:
				e.put('e')
			case 0x22:
				e.put('"')
			case 0x5c:
				e.put('\\')
			case 0x85:
				e.put('N')
			case 0xA0:
				e.put('_')
			case 0x2028:
				e.put('L')
			case 0x2029:
				e.put('P')
			default:
				digits := 0
				switch {
				case r <= 0xFF:
					e.put('x')
					digits = 2
				case r <= 0xFFFF:
					e.put('u')
					digits = 4
				default:
					e.put('U')
					digits = 8
				}
				for k := (digits - 1) * 4; k >= 0; k -= 4 {
					e.put("0123456789ABCDEF"[(r>>uint(k))&0x0F])
				}
			}
			spaces = false
		case value[i] == ' ':
			if allowBreaks && !spaces && e.column > bestWidth && i > 0 && i < len(value)-1 {
				e.writeIndent()
				if isSpace(value, i+1) {
					e.put('\\')
				}
				i++
			} else {
				i = e.write(value, i)
			}
			spaces = true
		default:
			i = e.write(value, i)
			spaces = false
		}
	}
	e.writeIndicator(`"`, false, false, false)
	e.whitespace = false
	e.indention = false
}

func (e *yamlEmitter) writeLiteral(value string) {
	e.writeIndicator("|", true, false, false)
	// The block scalar's hints (yaml_emitter_write_block_scalar_hints).
	if isSpace(value, 0) || isBreak(value, 0) {
		e.writeIndicator(string(rune('0'+bestIndent)), false, false, false)
	}
	chomp := ""
	if len(value) == 0 {
		chomp = "-"
	} else {
		i := len(value) - 1
		for value[i]&0xC0 == 0x80 {
			i--
		}
		if !isBreak(value, i) {
			chomp = "-"
		} else if i == 0 {
			chomp = "+"
		} else {
			i--
			for value[i]&0xC0 == 0x80 {
				i--
			}
			if isBreak(value, i) {
				chomp = "+"
			}
		}
	}
	if chomp != "" {
		e.writeIndicator(chomp, false, false, false)
	}
	e.putBreak()
	e.indention = true
	e.whitespace = true
	breaks := true
	for i := 0; i < len(value); {
		if isBreak(value, i) {
			i = e.writeBreak(value, i)
			e.indention = true
			breaks = true
		} else {
			if breaks {
				e.writeIndent()
			}
			i = e.write(value, i)
			e.indention = false
			breaks = false
		}
	}
}

// The character classes of go-yaml's yamlprivateh.go, on strings; an
// index past the end is no character.

func at(s string, i int) byte {
	if i < len(s) {
		return s[i]
	}
	return 0
}

func width(b byte) int {
	switch {
	case b&0x80 == 0x00:
		return 1
	case b&0xE0 == 0xC0:
		return 2
	case b&0xF0 == 0xE0:
		return 3
	case b&0xF8 == 0xF0:
		return 4
	}
	return 0
}

func isSpace(s string, i int) bool { return at(s, i) == ' ' }

func isBlank(s string, i int) bool { b := at(s, i); return b == ' ' || b == '\t' }

func isBreak(s string, i int) bool {
	b := at(s, i)
	return b == '\r' || b == '\n' ||
		b == 0xC2 && at(s, i+1) == 0x85 ||
		b == 0xE2 && at(s, i+1) == 0x80 && (at(s, i+2) == 0xA8 || at(s, i+2) == 0xA9)
}

func isBlankz(s string, i int) bool {
	return i >= len(s) || s[i] == 0 || isBlank(s, i) || isBreak(s, i)
}

func isPrintable(s string, i int) bool {
	b := s[i]
	return b == 0x0A ||
		b >= 0x20 && b <= 0x7E ||
		b == 0xC2 && at(s, i+1) >= 0xA0 ||
		b > 0xC2 && b < 0xED ||
		b == 0xED && at(s, i+1) < 0xA0 ||
		b == 0xEE ||
		b == 0xEF && !(at(s, i+1) == 0xBB && at(s, i+2) == 0xBF) &&
			!(at(s, i+1) == 0xBF && (at(s, i+2) == 0xBE || at(s, i+2) == 0xBF))
}

// readable tells whether s survives the JSON round trip as it is: valid
// UTF-8 (JSON would replace the rest), and no character that JSON writes
// as it is and go-yaml's reader refuses (DEL, C1 controls, U+FFFE, U+FFFF)
// or reads as a line break (NEL).
func readable(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < utf8.RuneSelf {
			if c == 0x7F {
				return false
			}
			continue
		}
		r, w := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && w == 1 || r >= 0x80 && r <= 0x9F || r == 0xFFFE || r == 0xFFFF {
			return false
		}
		i += w - 1
	}
	return true
}

// floatText is how a float comes out of the JSON round trip: written as
// encoding/json writes it, read back by go-yaml as an integer when it
// looks like one, else as a float written with the shortest 'g' format.
// NaN and infinities are not JSON (false).
func floatText(f float64, bits int) (string, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return "", false
	}
	// encoding/json's floatEncoder.
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b := strconv.AppendFloat(nil, f, format, -1, bits)
	if format == 'e' {
		// clean up e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	s := string(b)
	// go-yaml's resolve of a plain scalar starting with a digit or sign.
	if i, err := strconv.ParseInt(s, 0, 64); err == nil {
		return strconv.FormatInt(i, 10), true
	}
	if u, err := strconv.ParseUint(s, 0, 64); err == nil {
		return strconv.FormatUint(u, 10), true
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !yamlStyleFloat(s) {
		return "", false
	}
	return strconv.FormatFloat(v, 'g', -1, 64), true
}

// resolvesAsString tells whether s, written plain, reads back as a string
// (go-yaml v2's resolve with no tag).
func resolvesAsString(in string) bool {
	hint := byte('N')
	if in != "" {
		hint = resolveHint(in[0])
	}
	if hint == 0 {
		return true
	}
	switch in {
	case "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON",
		"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF",
		"", "~", "null", "Null", "NULL",
		".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF",
		"<<":
		return false
	}
	switch hint {
	case '.':
		_, err := strconv.ParseFloat(in, 64)
		return err != nil
	case 'D', 'S':
		if isTimestamp(in) {
			return false
		}
		plain := strings.ReplaceAll(in, "_", "")
		if _, err := strconv.ParseInt(plain, 0, 64); err == nil {
			return false
		}
		if _, err := strconv.ParseUint(plain, 0, 64); err == nil {
			return false
		}
		if yamlStyleFloat(plain) {
			if _, err := strconv.ParseFloat(plain, 64); err == nil {
				return false
			}
		}
		if strings.HasPrefix(plain, "0b") {
			if _, err := strconv.ParseInt(plain[2:], 2, 64); err == nil {
				return false
			}
			if _, err := strconv.ParseUint(plain[2:], 2, 64); err == nil {
				return false
			}
		} else if strings.HasPrefix(plain, "-0b") {
			if _, err := strconv.ParseInt("-"+plain[3:], 2, 64); err == nil {
				return false
			}
		}
	}
	return true
}

// resolveHint is go-yaml v2's resolveTable.
func resolveHint(c byte) byte {
	switch c {
	case '+', '-':
		return 'S'
	case '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return 'D'
	case 'y', 'Y', 'n', 'N', 't', 'T', 'f', 'F', 'o', 'O', '~':
		return 'M'
	case '.':
		return '.'
	}
	return 0
}

// yamlStyleFloat matches ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$.
func yamlStyleFloat(s string) bool {
	i := 0
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	} else {
		if digits() == 0 {
			return false
		}
		if i < len(s) && s[i] == '.' {
			i++
			digits()
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

var base60float = regexp.MustCompile(`^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`)

// isBase60Float is go-yaml v2's: YAML 1.1's sexagesimal numbers are
// quoted for other parsers.
func isBase60Float(s string) bool {
	if s == "" {
		return false
	}
	c := s[0]
	if !(c == '+' || c == '-' || c >= '0' && c <= '9') || strings.IndexByte(s, ':') < 0 {
		return false
	}
	return base60float.MatchString(s)
}

// isTimestamp is go-yaml v2's parseTimestamp, succeeding.
func isTimestamp(s string) bool {
	i := 0
	for ; i < len(s); i++ {
		if c := s[i]; c < '0' || c > '9' {
			break
		}
	}
	if i != 4 || i == len(s) || s[i] != '-' {
		return false
	}
	for _, format := range []string{
		"2006-1-2T15:4:5.999999999Z07:00",
		"2006-1-2t15:4:5.999999999Z07:00",
		"2006-1-2 15:4:5.999999999",
		"2006-1-2",
	} {
		if _, err := time.Parse(format, s); err == nil {
			return true
		}
	}
	return false
}

// sortKeys sorts keys in go-yaml v2's order. That order is not
// transitive with some keys (v1beta1 < v2 < v10 < v1beta1), and go-yaml
// sorts keys in the map's random order: its output for such maps varies
// from run to run. Sorting from one order (bytes) makes it the same every
// time; for up to 12 keys, with go-yaml's algorithm (an insertion sort),
// one of go-yaml's outputs.
func sortKeys(keys []string) {
	cmp := func(a, b string) int {
		if keyLess(a, b) {
			return -1
		}
		if keyLess(b, a) {
			return 1
		}
		return 0
	}
	if len(keys) > 12 {
		slices.Sort(keys)
		slices.SortStableFunc(keys, cmp)
		return
	}
	// Insertion sorts, as slices' for short slices, without their cost.
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keyLess(keys[j], keys[j-1]); j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
}

// keyLess is go-yaml v2's order of string keys (sorter.go): runs of digits
// compare as numbers, and a letter sorts after anything else.
func keyLess(a, b string) bool {
	if ascii(a) && ascii(b) {
		// The common case: the first difference is between two letters.
		for i := 0; i < len(a) && i < len(b); i++ {
			if a[i] == b[i] {
				continue
			}
			if isASCIILetter(a[i]) && isASCIILetter(b[i]) {
				return a[i] < b[i]
			}
			break
		}
		return keyLessRunes(a, b, len(a), len(b), func(s string, i int) rune { return rune(s[i]) })
	}
	ar, br := []rune(a), []rune(b)
	return keyLessRunes(ar, br, len(ar), len(br), func(s []rune, i int) rune { return s[i] })
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func keyLessRunes[S any](ar, br S, na, nb int, r func(S, int) rune) bool {
	for i := 0; i < na && i < nb; i++ {
		ai, bi := r(ar, i), r(br, i)
		if ai == bi {
			continue
		}
		al := unicode.IsLetter(ai)
		bl := unicode.IsLetter(bi)
		if al && bl {
			return ai < bi
		}
		if al || bl {
			return bl
		}
		var an, bn int64
		if ai == '0' || bi == '0' {
			for j := i - 1; j >= 0 && unicode.IsDigit(r(ar, j)); j-- {
				if r(ar, j) != '0' {
					an = 1
					bn = 1
					break
				}
			}
		}
		var aj, bj int
		for aj = i; aj < na && unicode.IsDigit(r(ar, aj)); aj++ {
			an = an*10 + int64(r(ar, aj)-'0')
		}
		for bj = i; bj < nb && unicode.IsDigit(r(br, bj)); bj++ {
			bn = bn*10 + int64(r(br, bj)-'0')
		}
		if an != bn {
			return an < bn
		}
		if aj != bj {
			return aj < bj
		}
		return ai < bi
	}
	return na < nb
}
