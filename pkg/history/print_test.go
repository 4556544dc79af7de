package history

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/exit"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/pause"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// Print says each cluster not read on stderr first, then the revisions
// in the outcomes' order in each format, the pauses but in YAML; its
// exit is 130 when interrupted, else 1 when a cluster was not read.
func TestReportPrint(t *testing.T) {
	at := time.Date(2026, 11, 26, 7, 0, 0, 0, time.UTC)
	rev := func(cluster string, n int, current bool) Entry {
		return Entry{Type: "revision", Cluster: cluster, Group: "prod", Current: current, Revision: revision.Revision{App: "web", Number: n, Time: at, Digest: "sha256:1"}}
	}
	r := Report{
		Clusters: []*fleet.Cluster{{Name: "c1"}, {Name: "c2"}, {Name: "c3"}},
		Outcomes: []runner.Outcome{{Cluster: "c1"}, {Cluster: "c2", Err: errors.New("forbidden")}, {Cluster: "c3"}},
		Entries:  map[string][]Entry{"c3": {rev("c3", 1, true)}, "c1": {rev("c1", 1, false), rev("c1", 2, true)}},
		Pauses:   map[string][]pause.Pause{"c3": {{By: "bob", At: time.Now().Add(-time.Hour), Reason: "freeze"}}},
	}
	ok := r
	ok.Outcomes = []runner.Outcome{{Cluster: "c1"}, {Cluster: "c3"}}
	for _, tt := range []struct {
		name, format string
		r            Report
		interrupted  bool
		// lines are how stdout's lines start; errOut is stderr.
		lines  []string
		errOut string
		code   int
	}{
		{"table", "", r, false, []string{"CLUSTER", "c1  ", "c1  ", "c3  ", `Paused: c3 paused 60m ago by bob: "freeze"`}, "error: c2: forbidden\n", exit.Failed},
		{"json", "json", ok, false, []string{`{"type":"revision","cluster":"c1"`, `{"type":"revision","cluster":"c1"`, `{"type":"revision","cluster":"c3"`, `{"type":"pause","cluster":"c3"`}, "", exit.OK},
		{"yaml", "yaml", ok, false, []string{"- app: web", "  cluster: c1", "  current: false"}, "", exit.OK},
		{"interrupted", "json", r, true, []string{`{"type":"revision","cluster":"c1"`, `{"type":"revision","cluster":"c1"`, `{"type":"revision","cluster":"c3"`, `{"type":"pause","cluster":"c3"`}, "error: c2: forbidden\n", exit.Interrupted},
		{"none", "", Report{Outcomes: []runner.Outcome{{Cluster: "c1"}}}, false, nil, "No revisions found.\n", exit.OK},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.interrupted {
				cancel()
			}
			var out, errOut bytes.Buffer
			p := output.NewPrinter(&out, tt.format == "json", output.NewPrefixer([]string{"c1", "c2", "c3"}, false), 10)
			code := exit.OK
			if err := tt.r.Print(ctx, p, &errOut, tt.format); err != nil {
				var e *exit.Error
				if !errors.As(err, &e) {
					t.Fatalf("%v: not an exit.Error", err)
				}
				code = e.Code
			}
			if code != tt.code {
				t.Errorf("exit %d, want %d", code, tt.code)
			}
			if errOut.String() != tt.errOut {
				t.Errorf("stderr %q, want %q", errOut.String(), tt.errOut)
			}
			lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			if out.Len() == 0 {
				lines = nil
			}
			if len(lines) < len(tt.lines) || (tt.format != "yaml" && len(lines) != len(tt.lines)) {
				t.Fatalf("stdout:\n%s", out.String())
			}
			for i, want := range tt.lines {
				if !strings.HasPrefix(lines[i], want) {
					t.Errorf("line %d %q, want it to start with %q", i, lines[i], want)
				}
			}
			if tt.format == "yaml" && strings.Contains(out.String(), "Paused") {
				t.Errorf("yaml with the pauses:\n%s", out.String())
			}
		})
	}
}
