package pause

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
)

// Print says the pauses in the clusters' order, not the map's: lines,
// or with JSON an event each.
func TestPrint(t *testing.T) {
	clusters := []*fleet.Cluster{{Name: "c1"}, {Name: "c2"}, {Name: "c3"}}
	at := time.Now().Add(-10 * time.Minute)
	pauses := map[string][]Pause{
		"c3": {{By: "bob", At: at, Reason: "freeze"}},
		"c1": {{App: "web", By: "alice", At: at, Reason: "INC-1"}},
	}
	for _, tt := range []struct {
		json bool
		want string
	}{
		{false, "Paused: c1 web paused 10m ago by alice: \"INC-1\"\nPaused: c3 paused 10m ago by bob: \"freeze\"\n"},
		{true, `{"type":"pause","cluster":"c1","app":"web","by":"alice","at":"` + at.Format(time.RFC3339Nano) + `","reason":"INC-1"}` + "\n" +
			`{"type":"pause","cluster":"c3","by":"bob","at":"` + at.Format(time.RFC3339Nano) + `","reason":"freeze"}` + "\n"},
	} {
		var out bytes.Buffer
		Print(output.NewPrinter(&out, tt.json, output.NewPrefixer([]string{"c1", "c2", "c3"}, false), 10), clusters, pauses)
		if diff := cmp.Diff(tt.want, out.String()); diff != "" {
			t.Errorf("json %v (-want +got):\n%s", tt.json, diff)
		}
	}
}
