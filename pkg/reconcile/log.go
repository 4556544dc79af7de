package reconcile

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"time"
)

// JSONLog turns every line written to it into one JSON object on a line
// of its own, starting with "time", "level" and "msg", for log
// collectors: a line that is a JSON object (apply's -o json events) keeps
// its fields after those three (its own msg, if any, is the msg), any
// other line becomes the msg. The level
// is "error" for an event with an error or a line starting with "error:",
// "warning" for a reported drift or a "warning:" line, else "info". It is
// safe for concurrent use; partial lines wait for their end.
type JSONLog struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time
	buf []byte
}

// NewJSONLog is a JSONLog on w, its times from now.
func NewJSONLog(w io.Writer, now func() time.Time) *JSONLog {
	return &JSONLog{w: w, now: now}
}

// Write implements io.Writer.
func (l *JSONLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := l.buf[:i]
		l.buf = l.buf[i+1:]
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if _, err := l.w.Write(l.decorate(line)); err != nil {
			return len(p), err
		}
	}
}

// decorate makes one JSON line of line.
func (l *JSONLog) decorate(line []byte) []byte {
	head := map[string]string{"time": l.now().UTC().Format(time.RFC3339Nano)}
	var fields map[string]json.RawMessage
	trimmed := bytes.TrimSpace(line)
	if json.Unmarshal(trimmed, &fields) != nil || fields == nil {
		text := strings.TrimSpace(string(line))
		head["level"], head["msg"] = textLevel(text), text
		return joinJSON(head, nil)
	}
	str := func(k string) string {
		var s string
		_ = json.Unmarshal(fields[k], &s)
		return s
	}
	head["level"] = "info"
	switch {
	case str("error") != "" || str("state") == "failed" || str("action") == "failed":
		head["level"] = "error"
	case str("decision") == DecDrifted, len(fields["warning"]) > 0 && str("warning") != "":
		head["level"] = "warning"
	}
	if msg := str("msg"); msg != "" {
		head["msg"] = msg
	} else {
		msg := str("type")
		for _, k := range []string{"action", "state", "decision"} {
			if v := str(k); v != "" {
				msg += " " + v
				break
			}
		}
		if obj := str("object"); obj != "" {
			msg += ": " + obj
		}
		head["msg"] = strings.TrimSpace(msg)
	}
	for _, k := range []string{"time", "level", "msg"} {
		delete(fields, k) // ours win; apply's events have none of them
	}
	var rest []byte
	if len(fields) > 0 {
		b, err := json.Marshal(fields) // the event's fields, by name
		if err == nil {
			rest = b[1 : len(b)-1]
		}
	}
	return joinJSON(head, rest)
}

// joinJSON writes time, level and msg first, then rest (the inside of a
// JSON object, without its braces), and a newline.
func joinJSON(head map[string]string, rest []byte) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range []string{"time", "level", "msg"} {
		v, ok := head[k]
		if !ok {
			continue
		}
		if i > 0 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(k)
		val, _ := json.Marshal(v)
		b.Write(key)
		b.WriteByte(':')
		b.Write(val)
	}
	if len(rest) > 0 {
		b.WriteByte(',')
		b.Write(rest)
	}
	b.WriteString("}\n")
	return b.Bytes()
}

// textLevel is a text line's level.
func textLevel(line string) string {
	switch {
	case strings.HasPrefix(line, "error:"):
		return "error"
	case strings.HasPrefix(line, "warning:"), strings.HasPrefix(strings.ToLower(line), "warning"):
		return "warning"
	}
	return "info"
}
