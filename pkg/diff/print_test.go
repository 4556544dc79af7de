package diff

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-fleet/kubectl-fleet/internal/kubetest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/change"
)

// TestPaint: with colour on, additions are green, deletions red, file
// headers bold and hunk headers cyan; context lines and everything with
// colour off are left as they are.
func TestPaint(t *testing.T) {
	for _, tt := range []struct{ line, want string }{
		{"--- live/stg/ConfigMap/web/a\n", "\x1b[1m--- live/stg/ConfigMap/web/a\x1b[0m\n"},
		{"+++ merged/stg/ConfigMap/web/a\n", "\x1b[1m+++ merged/stg/ConfigMap/web/a\x1b[0m\n"},
		{"@@ -1,3 +1,3 @@\n", "\x1b[36m@@ -1,3 +1,3 @@\x1b[0m\n"},
		{"-  k: \"1\"\n", "\x1b[31m-  k: \"1\"\x1b[0m\n"},
		{"+  k: \"2\"\n", "\x1b[32m+  k: \"2\"\x1b[0m\n"},
		{"   data:\n", "   data:\n"},
	} {
		if got := paint(tt.line, true); got != tt.want {
			t.Errorf("paint(%q, true) = %q, want %q", tt.line, got, tt.want)
		}
		if got := paint(tt.line, false); got != tt.line {
			t.Errorf("paint(%q, false) = %q, want it unchanged", tt.line, got)
		}
	}
}

// Print writes the warning, the error or note, then the diff in its
// style; a kept object, an unchanged one and a failed one show no diff.
func TestPrint(t *testing.T) {
	text := "--- live/a\n+++ merged/a\n@@ -1 +1 @@\n-k: 1\n+k: 2\n"
	for _, tt := range []struct {
		d     Object
		style Style
		want  string
	}{
		{Object{Ref: "cm/a", Action: change.Configured, Text: text}, Plain, text},
		{Object{Ref: "cm/a", Action: change.Configured, Text: text, Warning: "w", Note: "n"}, ActionOnly, "cm/a: warning: w\ncm/a: n\ncm/a: change\n"},
		{Object{Ref: "cm/a", Action: change.Configured, Text: "-k: 1\n"}, Colored, "\x1b[31m-k: 1\x1b[0m\n"},
		{Object{Ref: "cm/a", Action: change.Unchanged, Warning: "w"}, Plain, "cm/a: warning: w\n"},
		{Object{Ref: "cm/a", Action: change.Kept, Note: "kept"}, Plain, "cm/a: kept\n"},
		{Object{Ref: "cm/a", Action: change.Configured, Text: text, Err: errors.New("boom")}, Plain, "cm/a: error: boom\n"},
		{Object{Ref: "w/a", Action: change.AfterCRD, Text: "+a\n"}, Plain, "w/a would be created after its CRD\n+a\n"},
	} {
		var b bytes.Buffer
		Print(&b, tt.d, tt.style)
		if b.String() != tt.want {
			t.Errorf("%+v in style %d: got %q, want %q", tt.d, tt.style, b.String(), tt.want)
		}
	}
}

func TestEventOf(t *testing.T) {
	live := kubetest.Object("v1", "ConfigMap", "ns", "a")
	ev := EventOf("c1", "web", Object{Ref: "configmap/a", Action: change.Pruned, Live: live, Err: errors.New("boom")})
	if want := (Event{Type: "diff", Cluster: "c1", App: "web", Object: "configmap/a", Namespace: "ns", Action: "prune", Error: "boom"}); ev != want {
		t.Errorf("got %+v, want %+v", ev, want)
	}
}

// External writes each object's live and merged forms under its cluster,
// in LIVE and MERGED, and removes both.
func TestExternal(t *testing.T) {
	e, err := NewExternal()
	if err != nil {
		t.Fatal(err)
	}
	live, merged := kubetest.Object("v1", "ConfigMap", "ns", "a"), kubetest.Object("v1", "ConfigMap", "ns", "a")
	merged.Object["data"] = map[string]any{"k": "2"}
	if err := e.Add("c1", Object{Path: "v1/ConfigMap/ns/a", Live: live, Merged: merged}); err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]string{e.live.Name: "name: a", e.merged.Name: "k: \"2\""} {
		data, err := os.ReadFile(filepath.Join(dir, "c1", "v1_ConfigMap_ns_a.yaml"))
		if err != nil || !strings.Contains(string(data), want) {
			t.Errorf("%s: %v:\n%s", dir, err, data)
		}
	}
	e.Remove()
	if _, err := os.Stat(e.live.Name); !os.IsNotExist(err) {
		t.Errorf("LIVE left behind: %v", err)
	}
}

// ExternalFromEnv makes the folders only when $KUBECTL_EXTERNAL_DIFF is
// set and the output is text; a nil External gathers, runs and removes
// nothing.
func TestExternalFromEnv(t *testing.T) {
	t.Setenv("KUBECTL_EXTERNAL_DIFF", "")
	if e, err := ExternalFromEnv(false); e != nil || err != nil {
		t.Errorf("unset: %v, %v; want none", e, err)
	}
	t.Setenv("KUBECTL_EXTERNAL_DIFF", "meld")
	if e, err := ExternalFromEnv(true); e != nil || err != nil {
		t.Errorf("-o json: %v, %v; want none", e, err)
		e.Remove()
	}
	var none *External
	none.Gather("c1", []Object{{Path: "v1/ConfigMap/ns/a"}})
	if err := none.Err(); err != nil {
		t.Errorf("nil External: Err = %v", err)
	}
	if err := none.Run(genericiooptions.IOStreams{}); err != nil {
		t.Errorf("nil External: Run = %v", err)
	}
	none.Remove()
	e, err := ExternalFromEnv(false)
	if e == nil || err != nil {
		t.Fatalf("set: %v, %v; want the folders", e, err)
	}
	e.Remove()
}

// Gather adds what it can and keeps the first error for Err: a cluster
// whose folder cannot be made (a file is in its way) fails, the diffs
// that failed are left out.
func TestExternalGather(t *testing.T) {
	e, err := NewExternal()
	if err != nil {
		t.Fatal(err)
	}
	defer e.Remove()
	live := kubetest.Object("v1", "ConfigMap", "ns", "a")
	ok := Object{Path: "v1/ConfigMap/ns/a", Live: live, Merged: live}
	e.Gather("c1", []Object{ok, {Path: "v1/ConfigMap/ns/b", Err: errors.New("forbidden")}})
	if err := e.Err(); err != nil {
		t.Fatalf("Err = %v after a good cluster", err)
	}
	if _, err := os.Stat(filepath.Join(e.live.Name, "c1", "v1_ConfigMap_ns_b.yaml")); !os.IsNotExist(err) {
		t.Errorf("the failed diff was added: %v", err)
	}
	for _, c := range []string{"c2", "c3"} {
		if err := os.WriteFile(filepath.Join(e.live.Name, c), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	e.Gather("c2", []Object{ok})
	first := e.Err()
	e.Gather("c3", []Object{ok})
	if first == nil || !strings.Contains(first.Error(), "c2") || e.Err() != first {
		t.Errorf("Err = %v then %v; want c2's error, kept", first, e.Err())
	}
}
