package rendered

import (
	"context"
	"fmt"
	"slices"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// Stored is revision n of app as each of clusters stored it (render
// --revision), parallel clusters at once: a Set of the clusters that
// have it, and an error per cluster that does not, in fleet order.
func Stored(ctx context.Context, conn Connector, f *fleet.Fleet, clusters []*fleet.Cluster, app string, n, parallel int) (*Set, []error, error) {
	if err := conn.CheckContexts(ctx, f, clusters); err != nil {
		return nil, nil, err
	}
	results := make([]render.Result, len(clusters))
	names, byName := fleet.Index(clusters)
	outcomes := runner.Run(ctx, runner.Every(names), parallel, func(ctx context.Context, name string) error {
		c := byName[name]
		client, err := conn.Connect(ctx, f, c)
		if err != nil {
			return err
		}
		_, objs, err := revision.Load(ctx, client, app, n)
		results[slices.Index(names, name)] = render.Result{Target: render.Target{Cluster: render.ClusterOf(f, c), App: app}, Objects: objs}
		return err
	})
	s := &Set{Fleet: f}
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
