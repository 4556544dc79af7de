package diff

import (
	"fmt"
	"io"
	"strings"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/change"
)

// Style is how Print writes an object's unified diff.
type Style int

const (
	// Plain writes the unified diff as it is.
	Plain Style = iota
	// Colored colours it for a terminal: additions green, deletions red,
	// file headers bold, hunk headers cyan.
	Colored
	// ActionOnly writes the object's action instead: an external diff
	// program (External) shows the rest.
	ActionOnly
)

// Print writes one object's difference as kubectl fleet diff prints it:
// its warning, its error or note, then its unified diff in style. An
// unchanged object has nothing to print but a warning.
func Print(w io.Writer, d Object, style Style) {
	if d.Warning != "" {
		fmt.Fprintf(w, "%s: warning: %s\n", d.Ref, d.Warning)
	}
	switch {
	case d.Err != nil:
		fmt.Fprintf(w, "%s: error: %v\n", d.Ref, d.Err)
		return
	case d.Action == change.Unchanged:
		return
	case d.Action == change.AfterCRD:
		fmt.Fprintf(w, "%s would be created after its CRD\n", d.Ref)
	case d.Note != "":
		fmt.Fprintf(w, "%s: %s\n", d.Ref, d.Note)
	}
	if d.Action == change.Kept {
		return
	}
	if style == ActionOnly {
		fmt.Fprintf(w, "%s: %s\n", d.Ref, d.Action.Planned())
		return
	}
	var b strings.Builder
	for _, line := range strings.SplitAfter(d.Text, "\n") {
		if line == "" {
			continue
		}
		b.WriteString(paint(line, style == Colored))
	}
	fmt.Fprint(w, b.String())
}

// paint colours a diff line on a terminal: additions green, deletions red,
// hunk headers cyan.
func paint(line string, color bool) string {
	if !color {
		return line
	}
	code := 0
	switch {
	case strings.HasPrefix(line, "+++"), strings.HasPrefix(line, "---"):
		code = 1
	case strings.HasPrefix(line, "+"):
		code = 32
	case strings.HasPrefix(line, "-"):
		code = 31
	case strings.HasPrefix(line, "@@"):
		code = 36
	}
	if code == 0 {
		return line
	}
	return fmt.Sprintf("\x1b[%dm%s\x1b[0m\n", code, strings.TrimSuffix(line, "\n"))
}

// Event is the JSON form of one object's difference, a line of diff -o
// json.
type Event struct {
	Type      string `json:"type"`
	Cluster   string `json:"cluster"`
	App       string `json:"app"`
	Object    string `json:"object"`
	Namespace string `json:"namespace,omitempty"`
	Action    string `json:"action"`
	Diff      string `json:"diff,omitempty"`
	Note      string `json:"note,omitempty"`
	Warning   string `json:"warning,omitempty"`
	Conflict  bool   `json:"conflict,omitempty"`
	Error     string `json:"error,omitempty"`
}

// EventOf is the event ("type": "diff") of an object's difference of app
// on cluster.
func EventOf(cluster, app string, d Object) Event {
	ev := Event{Type: "diff", Cluster: cluster, App: app, Object: d.Ref, Action: d.Action.Planned(), Diff: d.Text, Note: d.Note, Warning: d.Warning, Conflict: d.Conflict}
	if d.Err != nil {
		ev.Error = d.Err.Error()
	}
	switch {
	case d.Merged != nil:
		ev.Namespace = d.Merged.GetNamespace()
	case d.Live != nil:
		ev.Namespace = d.Live.GetNamespace()
	case d.Current != nil:
		ev.Namespace = d.Current.GetNamespace() // skipped as unchanged
	}
	return ev
}
