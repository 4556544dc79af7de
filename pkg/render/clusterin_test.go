package render

import (
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
)

// A cluster as its render saw it carries what was read from it; with no
// render of it, it is the fleet file's.
func TestClusterIn(t *testing.T) {
	f := &fleet.Fleet{Metadata: fleet.Metadata{Name: "acme"}, Groups: []fleet.Group{{Name: "g"}}, Clusters: []fleet.Cluster{{Name: "eu", Group: "g", Attributes: map[string]any{"a": 1}}, {Name: "us", Group: "g"}}}
	results := []Result{{Target: Target{App: "web", Cluster: Cluster{Name: "us", Attributes: map[string]any{"read": "from the cluster"}}}}}
	if got := ClusterIn(f, &f.Clusters[1], results); got.Attributes["read"] != "from the cluster" {
		t.Errorf("us: %+v", got)
	}
	if got := ClusterIn(f, &f.Clusters[0], results); got.Name != "eu" || got.Attributes["a"] != 1 || got.Fleet != "acme" {
		t.Errorf("eu: %+v", got)
	}
}
