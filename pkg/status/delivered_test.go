package status

import (
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
)

// What a delivered cluster's Flux says of the tag's artifact: its state
// is Flux's until Flux applied the artifact, then the objects' health
// ("") says; Flux reconciling what it applied (Ready Unknown, every
// interval) is not out of sync.
func TestPublishedState(t *testing.T) {
	const d, old = "sha256:aaaa", "sha256:bbbb"
	for _, tc := range []struct {
		name string
		flux *publish.Flux
		want string
	}{
		{"not observed", nil, NotObserved},
		{"applied, Ready", &publish.Flux{Fetched: "c@" + d, Applied: "c@" + d, Attempted: "c@" + d, Ready: "True"}, ""},
		{"applied, reconciling again", &publish.Flux{Fetched: "c@" + d, Applied: "c@" + d, Attempted: "c@" + d, Ready: "Unknown"}, ""},
		{"not fetched yet", &publish.Flux{Fetched: "c@" + old, Applied: "c@" + old, Attempted: "c@" + old, Ready: "True"}, OutOfSync},
		{"fetched, applying", &publish.Flux{Fetched: "c@" + d, Applied: "c@" + old, Attempted: "c@" + d, Ready: "Unknown"}, OutOfSync},
		{"failed", &publish.Flux{Fetched: "c@" + d, Applied: "c@" + old, Attempted: "c@" + d, Ready: "False", Message: "boom"}, Failed},
		{"refused by the source", &publish.Flux{Fetched: "c@" + old, Applied: "c@" + old, SourceReady: "False", SourceMessage: "no matching signatures", Ready: "True"}, Failed},
		{"its Flux objects tampered with", &publish.Flux{Fetched: "c@" + d, Applied: "c@" + d, Ready: "True", Tampered: []string{"the OCIRepository's verify is none"}}, Failed},
	} {
		p := &Published{Artifact: d, Current: d, Flux: tc.flux}
		if got := p.state(); got != tc.want {
			t.Errorf("%s: state %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A tag that is not at the current revision's artifact was moved by
// someone else: TagMoved, observed or not, whatever Flux says; an app
// with no revision recorded has nothing to compare.
func TestPublishedTagMoved(t *testing.T) {
	const cur, moved = "sha256:aaaa", "sha256:eeee"
	applied := &publish.Flux{Fetched: "c@" + moved, Applied: "c@" + moved, Ready: "True"}
	for _, tc := range []struct {
		name string
		p    Published
		want string
	}{
		{"moved, observed", Published{Artifact: moved, Current: cur, Flux: applied}, TagMoved},
		{"moved, not observed", Published{Artifact: moved, Current: cur}, TagMoved},
		{"at the current revision", Published{Artifact: cur, Current: cur}, NotObserved},
		{"no revision recorded", Published{Artifact: moved, Flux: applied}, ""},
	} {
		if got := tc.p.state(); got != tc.want {
			t.Errorf("%s: state %q, want %q", tc.name, got, tc.want)
		}
	}
	p := Published{Artifact: moved, Current: cur}
	if got, want := p.cell(), "tag moved to sha256:eeee by someone else, not the current revision's sha256:aaaa"; got != want {
		t.Errorf("cell %q, want %q", got, want)
	}
	if (App{Published: &p}).OK() || (App{Published: &p}).Unobserved() {
		t.Error("a moved tag is neither fine nor merely unobserved")
	}
	unobserved := App{Published: &Published{Artifact: cur, Current: cur}}
	if unobserved.OK() || !unobserved.Unobserved() {
		t.Error("an unobserved app is its own outcome")
	}
}
