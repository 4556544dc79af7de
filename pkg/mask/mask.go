// Package mask hides the values a run decrypted wherever they would be
// printed, as Terraform's sensitive mark follows a value through every
// expression that uses it: in objects of any kind and any field, in a
// diff's both sides, in text (errors, jsonnet traces, logs, reports) and
// in the streams a command writes. A Set is filled as files are
// decrypted and read by every printer of the run.
//
// The rules, one for each place a value can land:
//
//   - a whole value of an object (a string, or a number, equal to a
//     decrypted value) is masked, however short;
//   - inside a longer string, and in free text, a decrypted value is
//     masked from MinText characters on, in its plain, base64 and
//     JSON-quoted forms: shorter ones would match line numbers and
//     counts; one shorter than MinLoose only where it stands alone (not
//     between letters or digits), or a PIN would cut digests and UIDs;
//   - a diff masks a field on both sides when either side is masked, so
//     that a rotated value's old form is not printed either;
//   - booleans, null and one-character values carry no secret and are
//     never masked: masking every "true" would hide every diff.
package mask

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Masked replaces a value, as kubectl diff does for a Secret's.
const Masked = "***"

// MinText is the length from which a decrypted value is masked inside
// longer strings and free text; MinLoose the length from which it is
// masked there even between letters and digits.
const (
	MinText  = 4
	MinLoose = 8
)

// Set is the values one run must not print. The zero Set is empty and
// ready; a nil *Set masks nothing. It is safe for concurrent use.
type Set struct {
	mu sync.RWMutex
	// whole are the values masked where they are a whole value.
	whole map[string]bool
	// forms are what is searched in text: the values of MinText or more
	// characters, their lines, their base64 and their JSON forms.
	forms map[string]bool
	// loose and alone are the forms, sorted (textForms), built once the
	// forms last changed.
	loose, alone []string
	built        bool
}

// Add records a decrypted value: a string, a number or a boolean as a
// decrypted tree holds them.
func (s *Set) Add(v any) {
	text, ok := scalar(v)
	if s == nil || !ok || trivial(text) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.whole[text] {
		return
	}
	if s.whole == nil {
		s.whole, s.forms = map[string]bool{}, map[string]bool{}
	}
	s.whole[text] = true
	s.whole[base64.StdEncoding.EncodeToString([]byte(text))] = true
	if len(text) < MinText {
		return
	}
	quoted, _ := json.Marshal(text)
	for _, form := range []string{text, base64.StdEncoding.EncodeToString([]byte(text)), string(quoted[1 : len(quoted)-1])} {
		s.forms[form] = true
	}
	for line := range strings.Lines(text) {
		if line = strings.TrimSpace(line); len(line) >= MinText {
			s.forms[line] = true
		}
	}
	s.built = false
}

// scalar is a leaf's text: strings as they are, numbers as YAML and
// JSON print them.
func scalar(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case bool:
		return strconv.FormatBool(v), true
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return fmt.Sprint(v), true
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), true
	case float32:
		return strconv.FormatFloat(float64(v), 'f', -1, 32), true
	case json.Number:
		return v.String(), true
	}
	return "", false
}

// trivial values are never masked: they carry no secret, and masking
// them would hide every diff.
func trivial(v string) bool {
	switch strings.ToLower(v) {
	case "true", "false", "null", "yes", "no", "on", "off", "~":
		return true
	}
	return len(v) < 2
}

// Empty reports whether nothing is masked.
func (s *Set) Empty() bool {
	if s == nil {
		return true
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.whole) == 0
}

// Values are the masked values of MinText characters or more, longest
// first (vet's warning searches objects for them).
func (s *Set) Values() []string {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	for v := range s.whole {
		if s.forms[v] && !isBase64Of(v, s.whole) {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// In are the values of the set that objs hold, whole or inside a string
// (by Object's rules), each once: what a stored revision of objs keeps,
// so that it is masked when printed again in a run that decrypted
// nothing.
func (s *Set) In(objs ...map[string]any) []string {
	if s.Empty() {
		return nil
	}
	s.mu.RLock()
	var values []string
	for v := range s.whole {
		if !isBase64Of(v, s.whole) {
			values = append(values, v)
		}
	}
	s.mu.RUnlock()
	found := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		default:
			if _, isBool := v.(bool); isBool {
				return
			}
			text, ok := scalar(v)
			if !ok {
				return
			}
			if masked, _ := s.leaf(v); masked == v {
				return
			}
			for _, val := range values {
				b64 := base64.StdEncoding.EncodeToString([]byte(val))
				if text == val || text == b64 || len(val) >= MinText && (strings.Contains(text, val) || strings.Contains(text, b64)) {
					found[val] = true
				}
			}
		}
	}
	for _, o := range objs {
		walk(o)
	}
	out := make([]string, 0, len(found))
	for v := range found {
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

// isBase64Of reports whether v is the base64 form of another value of
// whole.
func isBase64Of(v string, whole map[string]bool) bool {
	b, err := base64.StdEncoding.DecodeString(v)
	return err == nil && len(b) > 0 && whole[string(b)]
}

// forms are the text forms masked, longest first so that a value is
// masked whole before a line of it is: loose (MinLoose characters or
// more) masked wherever they are, alone only where they stand alone.
func (s *Set) textForms() (loose, alone []string) {
	s.mu.RLock()
	loose, alone = s.loose, s.alone
	built := s.built
	s.mu.RUnlock()
	if built {
		return loose, alone
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.built {
		forms := make([]string, 0, len(s.forms))
		for f := range s.forms {
			forms = append(forms, f)
		}
		slices.SortFunc(forms, func(a, b string) int {
			if len(a) != len(b) {
				return len(b) - len(a)
			}
			return strings.Compare(a, b)
		})
		s.loose, s.alone = nil, nil
		for _, f := range forms {
			if len(f) >= MinLoose {
				s.loose = append(s.loose, f)
			} else {
				s.alone = append(s.alone, f)
			}
		}
		s.built = true
	}
	return s.loose, s.alone
}

// String is text with every decrypted value of MinText characters or
// more masked: the guard of errors, traces, logs and reports. Each form
// costs one search of the text (strings.Index), a replacement only where
// it is found.
func (s *Set) String(text string) string {
	if s.Empty() {
		return text
	}
	loose, alone := s.textForms()
	for _, f := range loose {
		if strings.Contains(text, f) {
			text = strings.ReplaceAll(text, f, Masked)
		}
	}
	for _, f := range alone {
		text = replaceAlone(text, f)
	}
	return text
}

// replaceAlone masks f in text where it stands alone: not between
// letters or digits (a PIN inside a digest or a UID is not the PIN).
func replaceAlone(text, f string) string {
	var b strings.Builder
	rest, done := text, 0
	for {
		i := strings.Index(rest, f)
		if i < 0 {
			break
		}
		at := len(text) - len(rest) + i
		end := at + len(f)
		if (at == 0 || !wordByte(text[at-1])) && (end == len(text) || !wordByte(text[end])) {
			if b.Len() == 0 {
				b.Grow(len(text))
			}
			b.WriteString(text[done:at])
			b.WriteString(Masked)
			done = end
			rest = text[end:]
			continue
		}
		rest = text[at+1:]
	}
	if done == 0 {
		return text
	}
	b.WriteString(text[done:])
	return b.String()
}

// wordByte reports whether c is an ASCII letter or digit.
func wordByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// leaf is a leaf masked: a whole decrypted value, or a string holding
// one; changed says whether it was.
func (s *Set) leaf(v any) (any, bool) {
	text, ok := scalar(v)
	if !ok {
		return v, false
	}
	if _, isBool := v.(bool); isBool {
		return v, false
	}
	s.mu.RLock()
	whole := s.whole[text]
	s.mu.RUnlock()
	if whole {
		return Masked, true
	}
	if str, isString := v.(string); isString && len(str) >= MinText {
		if out := s.String(str); out != str {
			return out, true
		}
	}
	return v, false
}

// Object is obj with every decrypted value masked (MaskObject's rules),
// and whether any was: a copy when one was, obj itself otherwise.
func (s *Set) Object(obj map[string]any) (map[string]any, bool) {
	if s.Empty() || obj == nil {
		return obj, false
	}
	out, changed := s.walk(obj)
	if !changed {
		return obj, false
	}
	return out.(map[string]any), true
}

// walk masks v's leaves, copying only what changed.
func (s *Set) walk(v any) (any, bool) {
	switch v := v.(type) {
	case map[string]any:
		var out map[string]any
		for k, e := range v {
			m, changed := s.walk(e)
			if !changed {
				continue
			}
			if out == nil {
				out = make(map[string]any, len(v))
				for k2, e2 := range v {
					out[k2] = e2
				}
			}
			out[k] = m
		}
		if out == nil {
			return v, false
		}
		return out, true
	case []any:
		var out []any
		for i, e := range v {
			m, changed := s.walk(e)
			if !changed {
				continue
			}
			if out == nil {
				out = slices.Clone(v)
			}
			out[i] = m
		}
		if out == nil {
			return v, false
		}
		return out, true
	}
	return s.leaf(v)
}

// Pair masks the two sides of a diff: a field masked on either side is
// masked on both, "*** (before)" and "*** (after)" where it changed, so
// that neither a decrypted value nor the value it replaces is printed.
// Either side may be nil (an object created or pruned).
func (s *Set) Pair(live, merged map[string]any) (map[string]any, map[string]any) {
	if s.Empty() {
		return live, merged
	}
	l, m, changed := s.pair(live, merged)
	if !changed {
		return live, merged
	}
	lm, _ := l.(map[string]any)
	mm, _ := m.(map[string]any)
	return lm, mm
}

// pair masks a and b, one field of both sides; an absent side is nil.
func (s *Set) pair(a, b any) (any, any, bool) {
	am, aIsMap := a.(map[string]any)
	bm, bIsMap := b.(map[string]any)
	if aIsMap && bIsMap || aIsMap && b == nil || bIsMap && a == nil {
		var outA, outB map[string]any
		if am != nil {
			outA = make(map[string]any, len(am))
		}
		if bm != nil {
			outB = make(map[string]any, len(bm))
		}
		changed := false
		for k := range union(am, bm) {
			ea, inA := am[k]
			eb, inB := bm[k]
			ma, mb, c := s.pair(ea, eb)
			changed = changed || c
			if inA {
				outA[k] = ma
			}
			if inB {
				outB[k] = mb
			}
		}
		if !changed {
			return a, b, false
		}
		return nilIfNil(outA, a), nilIfNil(outB, b), true
	}
	al, aIsList := a.([]any)
	bl, bIsList := b.([]any)
	if aIsList || bIsList {
		outA, outB := slices.Clone(al), slices.Clone(bl)
		changed := false
		for i := range max(len(al), len(bl)) {
			var ea, eb any
			if i < len(al) {
				ea = al[i]
			}
			if i < len(bl) {
				eb = bl[i]
			}
			ma, mb, c := s.pair(ea, eb)
			changed = changed || c
			if i < len(al) {
				outA[i] = ma
			}
			if i < len(bl) {
				outB[i] = mb
			}
		}
		if !changed {
			return a, b, false
		}
		return listOrNil(outA, a), listOrNil(outB, b), true
	}
	if aIsMap || bIsMap {
		// A map on one side and a leaf on the other: each on its own.
		ma, ca := s.walk(a)
		mb, cb := s.walk(b)
		return ma, mb, ca || cb
	}
	_, ca := s.leaf(a)
	_, cb := s.leaf(b)
	switch {
	case !ca && !cb:
		return a, b, false
	case a == nil:
		return nil, Masked, true
	case b == nil:
		return Masked, nil, true
	case fmt.Sprint(a) == fmt.Sprint(b):
		return Masked, Masked, true
	}
	return Masked + " (before)", Masked + " (after)", true
}

func union(a, b map[string]any) map[string]bool {
	out := make(map[string]bool, len(a)+len(b))
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// nilIfNil keeps an absent side absent.
func nilIfNil(m map[string]any, orig any) any {
	if orig == nil {
		return nil
	}
	return m
}

func listOrNil(l []any, orig any) any {
	if orig == nil {
		return nil
	}
	return l
}

// Writer is w with every write masked (String): a command's standard
// output and error, so that whatever reaches them, from whatever code,
// passes the mask. A value split across two writes is not seen: the
// writers before it write whole lines.
func (s *Set) Writer(w io.Writer) io.Writer { return &writer{s: s, w: w} }

type writer struct {
	s *Set
	w io.Writer
	// off turns the mask off (--show-secrets on standard output).
	off bool
}

func (w *writer) Write(p []byte) (int, error) {
	if w.off || w.s.Empty() {
		return w.w.Write(p)
	}
	masked := w.s.String(string(p))
	if masked == string(p) {
		return w.w.Write(p)
	}
	if _, err := io.WriteString(w.w, masked); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Unwrap is the writer w masks: a terminal check looks through it.
func (w *writer) Unwrap() io.Writer { return w.w }

// Show turns the mask of a writer Writer returned off (--show-secrets);
// any other writer is left as it is.
func Show(w io.Writer) {
	if mw, ok := w.(*writer); ok {
		mw.off = true
	}
}
