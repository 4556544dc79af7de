package apply

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/change"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
)

// Delete removes every member of an app's ApplySet from the cluster, in
// reverse dependency order (Namespaces and CRDs last), then the set's
// parent and the app's revisions. Only members are touched, each as the
// ownership rule decides (inventory.Neighbours.Decide). An app never
// applied is reported, not an error; one another fleet applied (fleet,
// when not empty, is this one's name) is refused. Members the rule could
// not decide on stay in the parent, which is kept, with an error.
func Delete(ctx context.Context, c *kube.Client, fleet, app string, dryRun bool, report func(Change)) (found bool, err error) {
	cfg := Config{App: app, Fleet: fleet, DryRun: dryRun, Report: func(ch Change) {
		if ch.Action == change.Pruned {
			ch.Action = change.Deleted
		}
		report(ch)
	}}
	p := newPass(c, cfg)
	if err := p.load(ctx); err != nil || !p.set.Exists {
		return false, err
	}
	if err := p.prune(ctx, inventory.ContentsOf(nil)); err != nil {
		return true, err
	}
	if n := p.retained.Members.Len(); n > 0 {
		if !dryRun {
			if err := p.set.WriteParent(ctx, c, p.retained, time.Time{}, FieldManager, p.set.Version); err != nil {
				return true, err
			}
		}
		return true, fmt.Errorf("%s of app %s not deleted: what decides it could not be read (said above); the app's inventory keeps them, for delete to try again", output.Plural(n, "object"), app)
	}
	opts := metav1.DeleteOptions{}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	err = c.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(inventory.Namespace).Delete(ctx, inventory.ParentName(app), opts)
	if err != nil && !apierrors.IsNotFound(err) {
		return true, fmt.Errorf("deleting the inventory of app %s: %w", app, err)
	}
	if !dryRun {
		// The history goes with the app, as helm uninstall's does.
		if err := revision.DeleteAll(ctx, c, app); err != nil {
			return true, err
		}
	}
	return true, nil
}
