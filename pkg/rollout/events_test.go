package rollout

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/change"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
)

// Each event reads as the line text output prints, and marshals as the
// JSON line of -o json, "type" first and without the text-only label.
func TestEvents(t *testing.T) {
	failed := revision.Verification{State: revision.Failed, Reason: "check smoke: exit status 1"}
	tests := []struct {
		ev   Event
		text string
		json string
	}{
		{objectChanged("eu", "web", "web", apply.Change{Ref: "configmap/a", Namespace: "web", Action: change.Created}, true),
			"web: configmap/a created (server dry run)",
			`{"type":"object","cluster":"eu","app":"web","object":"configmap/a","namespace":"web","action":"created","dryRun":true}`},
		{objectChanged("eu", "web", "", apply.Change{Ref: "service/b", Action: change.Failed, Err: errors.New("invalid"), Warning: "shared"}, true),
			"service/b failed: invalid; warning: shared", ""},
		{objectChanged("eu", "web", "", apply.Change{Ref: "deployment.apps/web", Health: apply.Unhealthy, Reason: "0 of 2 replicas ready"}, true),
			"deployment.apps/web unhealthy: 0 of 2 replicas ready",
			`{"type":"object","cluster":"eu","app":"web","object":"deployment.apps/web","health":"unhealthy","dryRun":true,"reason":"0 of 2 replicas ready"}`},
		{phaseEvent{Type: "phase", Cluster: "eu", App: "web", Phase: -1, Objects: 2}, "phase -1: 2 objects", ""},
		{RevisionEvent{Type: "revision", Cluster: "eu", App: "web", Revision: 3, New: true, Description: "rollback to 1", Label: "web (rollback)"},
			"web (rollback): revision 3 recorded (rollback to 1)", `{"type":"revision","cluster":"eu","app":"web","revision":3,"new":true,"description":"rollback to 1"}`},
		{RevisionEvent{Type: "revision", Cluster: "eu", App: "web", Revision: 2, Description: "apply"}, "revision 2 is current (the render has not changed)", ""},
		{RevisionEvent{Type: "revision", Cluster: "eu", App: "web", Revision: 2, New: true, Description: "apply"}, "revision 2 recorded", ""},
		{RevisionEvent{Type: "revision", Cluster: "eu", App: "web", Error: "forbidden"}, "revision not recorded: forbidden", ""},
		{verdictOf("eu", "web", "", 8, failed, nil), "revision 8 failed: check smoke: exit status 1",
			`{"type":"verification","cluster":"eu","app":"web","revision":8,"state":"failed","reason":"check smoke: exit status 1"}`},
		{verdictOf("eu", "web", "", 8, revision.Verification{State: revision.Verified}, errors.New("timeout")), "revision 8 verified; not recorded: timeout", ""},
		{CheckEvent{Type: "check", Cluster: "eu", Check: "smoke", State: "failed", Seconds: 0.31, Error: "exit status 1"}, "check smoke failed (0.3s): exit status 1", ""},
		{SoakEvent{Type: "soak", Cluster: "eu", State: "started", Left: 20}, "soak started: watching for 20s", ""},
		{SoakEvent{Type: "soak", Cluster: "eu", State: "failed", Left: 12.4, Error: "configmap/a is gone"}, "soak failed with 12s left: configmap/a is gone", ""},
		{SoakEvent{Type: "soak", Cluster: "eu", State: "passed"}, "soak passed", `{"type":"soak","cluster":"eu","state":"passed","secondsLeft":0}`},
		{lockEvent{Type: "lock", Cluster: "eu", App: "web", State: "waiting", Line: "waiting up to 1m0s for the lock", Label: "web"}, "web: waiting up to 1m0s for the lock",
			`{"type":"lock","cluster":"eu","app":"web","state":"waiting"}`},
	}
	for _, tt := range tests {
		if got := tt.ev.Text(); got != tt.text {
			t.Errorf("%T text:\n got %q\nwant %q", tt.ev, got, tt.text)
		}
		if tt.ev.Where() != "eu" {
			t.Errorf("%T is on %q", tt.ev, tt.ev.Where())
		}
		b, err := json.Marshal(tt.ev)
		if err != nil {
			t.Fatal(err)
		}
		if tt.json != "" && string(b) != tt.json {
			t.Errorf("%T JSON:\n got %s\nwant %s", tt.ev, b, tt.json)
		}
		if !strings.HasPrefix(string(b), `{"type":"`) {
			t.Errorf("%T JSON does not start with its type: %s", tt.ev, b)
		}
	}
}
