package rendered

import (
	"context"
	"fmt"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/mask"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
)

// Stored is revision n of app as each of clusters stored it (render
// --revision), parallel clusters at once: a Set of the clusters that
// have it, and an error per cluster that does not, in fleet order.
func Stored(ctx context.Context, conn Connector, f *fleet.Fleet, clusters []*fleet.Cluster, app string, n, parallel int, m *mask.Set) (*Set, []error, error) {
	if err := conn.CheckContexts(ctx, f, clusters); err != nil {
		return nil, nil, err
	}
	results := make([]render.Result, len(clusters))
	at := map[string]int{}
	for i, c := range clusters {
		at[c.Name] = i
	}
	outcomes := kube.Each(ctx, conn, f, clusters, parallel, func(ctx context.Context, c *fleet.Cluster, client *kube.Client) error {
		rev, objs, err := revision.Load(ctx, client, app, n)
		for _, v := range rev.Sensitive {
			m.Add(v)
		}
		results[at[c.Name]] = render.Result{Target: render.Target{Cluster: render.ClusterOf(f, c), App: app}, Objects: objs, Decrypted: len(rev.Sensitive) > 0}
		return err
	})
	s := &Set{Fleet: f, Mask: m}
	var errs []error
	for i, oc := range outcomes {
		if oc.Err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", oc.Cluster, oc.Err))
			continue
		}
		s.Clusters, s.Results = append(s.Clusters, clusters[i]), append(s.Results, results[i])
	}
	return s, errs, nil
}
