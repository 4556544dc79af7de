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
	} {
		p := &Published{Artifact: d, Flux: tc.flux}
		if got := p.state(); got != tc.want {
			t.Errorf("%s: state %q, want %q", tc.name, got, tc.want)
		}
	}
}
