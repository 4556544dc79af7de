package status

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/internal/kubetest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
)

// idling is a Connector over in-memory clusters that notes which
// clusters' connections were closed.
type idling struct {
	clusters map[string]*kubetest.Cluster
	mu       sync.Mutex
	idle     []string
}

func (c *idling) Connect(_ context.Context, _ *fleet.Fleet, cl *fleet.Cluster) (*kube.Client, error) {
	return c.clusters[cl.Name].Client, nil
}

func (c *idling) Idle(cluster string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.idle = append(c.idle, cluster)
}

// A status closes each cluster's connections once it is read (a status
// of 1,000 clusters ten at a time held 1,000 to its end), but not one
// that reads them again soon (--watch).
func TestReadClosesEachClusterOnceRead(t *testing.T) {
	f, err := fleet.Parse([]byte("apiVersion: fleet/v1alpha1\nkind: Fleet\nmetadata: {name: shop}\ngroups: [{name: prod}]\nclusters:\n  - {name: a, group: prod, context: a}\n  - {name: b, group: prod, context: b}\n"), "fleet.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	set := &rendered.Set{Fleet: f}
	conn := &idling{clusters: map[string]*kubetest.Cluster{}}
	for i := range f.Clusters {
		set.Clusters = append(set.Clusters, &f.Clusters[i])
		conn.clusters[f.Clusters[i].Name] = kubetest.New(t)
	}
	for _, again := range []bool{false, true} {
		conn.idle = nil
		outcomes, _, _ := Fleet{Set: set, Recorded: true, Parallel: 1, Concurrency: 1, Connector: conn, Again: again}.Read(context.Background())
		for _, oc := range outcomes {
			if oc.Err != nil {
				t.Fatalf("%s: %v", oc.Cluster, oc.Err)
			}
		}
		slices.Sort(conn.idle)
		if want := []string{"a", "b"}; !again && !slices.Equal(conn.idle, want) {
			t.Errorf("a status closed the connections of %v; want %v", conn.idle, want)
		}
		if again && len(conn.idle) > 0 {
			t.Errorf("a status read again soon closed the connections of %v; want none", conn.idle)
		}
	}
}
