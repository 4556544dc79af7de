package registry

import (
	"context"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/history"
)

// History reads a delivered cluster's history of apps (none: every app
// of the fleet) from its registry.
func (r Fleet) History(ctx context.Context, c *fleet.Cluster, apps []string) ([]history.Entry, error) {
	f := r.Fleet
	reg, err := r.registry(c)
	if err != nil {
		return nil, err
	}
	if len(apps) == 0 {
		for _, a := range f.Apps {
			apps = append(apps, a.Name)
		}
	}
	var out []history.Entry
	for _, app := range apps {
		h, err := reg.History(ctx, app, c.Name)
		if err != nil {
			return out, err
		}
		for _, r := range h.Revisions {
			out = append(out, history.Entry{Type: "revision", Cluster: c.Name, Group: c.Group, Current: r.Number == h.Current, Revision: r})
		}
	}
	return out, nil
}
