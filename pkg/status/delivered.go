package status

import (
	"strings"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
)

// Published is what a delivered cluster runs of an app: the artifact
// its tag points at and, when a context reads the cluster, what its
// Flux says (the revision it applied, Ready, since when).
type Published struct {
	// Repository is the app's (oci://…), Tag the cluster's there, and
	// Artifact what the tag points at ("" for no tag).
	Repository string `json:"repository"`
	Tag        string `json:"tag"`
	Artifact   string `json:"artifact,omitempty"`
	// Current is the artifact of the current revision the registry's
	// history records ("" for none): a tag elsewhere was moved by
	// someone else (TagMoved).
	Current string `json:"current,omitempty"`
	// Flux is nil when no context reads the cluster.
	Flux *publish.Flux `json:"flux,omitempty"`
	// FluxError is why Flux's objects could not be read.
	FluxError string `json:"fluxError,omitempty"`
}

// NotObserved is the state of an app published to a cluster no context
// reads: nothing says what it runs. TagMoved is that of an app whose tag
// is not at its current revision's artifact: someone else moved it
// (apply and reconcile move it back).
const (
	NotObserved = "NotObserved"
	TagMoved    = "TagMoved"
)

// state is what Published says of an app, or "" when its objects do:
// NotObserved, OutOfSync while Flux has not applied the tag's artifact,
// Failed when it failed to. Once it applied it, a Ready that is Unknown
// is Flux reconciling it again (every interval): the objects' health
// says how they are.
func (p *Published) state() string {
	switch {
	case p == nil:
		return ""
	case p.Current != "" && p.Artifact != p.Current:
		return TagMoved
	case p.Flux == nil:
		return NotObserved
	case len(p.Flux.Tampered) > 0 || p.Flux.Failed(p.Artifact) != "" || p.Flux.Refused(p.Artifact) != "":
		return Failed
	case !publish.Is(p.Flux.Applied, p.Artifact):
		return OutOfSync
	}
	return ""
}

// cell is what Published says of an app in a line, or "".
func (p *Published) cell() string {
	switch p.state() {
	case TagMoved:
		return "tag moved to " + publish.Short(p.Artifact) + " by someone else, not the current revision's " + publish.Short(p.Current)
	case NotObserved:
		return "published " + publish.Short(p.Artifact) + ", not observed"
	case Failed:
		if len(p.Flux.Tampered) > 0 {
			return "Flux objects not what bootstrap wrote: " + strings.Join(p.Flux.Tampered, "; ")
		}
		return "Flux failed " + publish.Short(p.Artifact) + ": " + p.Flux.Status()
	case OutOfSync:
		return "published " + publish.Short(p.Artifact) + ", Flux at " + publish.Short(p.Flux.Applied)
	}
	return ""
}
