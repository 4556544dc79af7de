package reconcile

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestJSONLog: every line becomes one JSON object starting with time,
// level and msg; apply's events keep their fields.
func TestJSONLog(t *testing.T) {
	var out bytes.Buffer
	l := NewJSONLog(&out, func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) })
	for _, s := range []string{
		`{"type":"object","cluster":"c1","app":"web","object":"configmap/a","action":"configured"}` + "\n",
		`{"type":"object","cluster":"c1","app":"web","object":"configmap/b","action":"failed","error":"boom"}` + "\n",
		`{"type":"reconcile","msg":"web: configmap/a drifted","cluster":"c1","decision":"drifted"}` + "\n",
		"error: half ", "a line\n",
		"\n",
		"Summary:\n",
	} {
		if _, err := l.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	want := []map[string]any{
		{"time": "2026-01-02T03:04:05Z", "level": "info", "msg": "object configured: configmap/a", "type": "object", "cluster": "c1", "app": "web", "object": "configmap/a", "action": "configured"},
		{"time": "2026-01-02T03:04:05Z", "level": "error", "msg": "object failed: configmap/b", "type": "object", "cluster": "c1", "app": "web", "object": "configmap/b", "action": "failed", "error": "boom"},
		{"time": "2026-01-02T03:04:05Z", "level": "warning", "msg": "web: configmap/a drifted", "type": "reconcile", "cluster": "c1", "decision": "drifted"},
		{"time": "2026-01-02T03:04:05Z", "level": "error", "msg": "error: half a line"},
		{"time": "2026-01-02T03:04:05Z", "level": "info", "msg": "Summary:"},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out.String())
	}
	for i, line := range lines {
		var got map[string]any
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatalf("line %d is not JSON: %v: %s", i, err, line)
		}
		if diff := cmp.Diff(want[i], got); diff != "" {
			t.Errorf("line %d (-want +got):\n%s", i, diff)
		}
		if !strings.HasPrefix(line, `{"time":`) {
			t.Errorf("line %d does not start with the time: %s", i, line)
		}
	}
}
