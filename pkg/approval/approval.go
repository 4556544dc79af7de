// Package approval binds a human's approval to one release: "kubectl
// fleet approve" records, in each selected cluster, who approved which
// render of each app (its digest, under the cluster's digest key); a
// rollout to a group marked "approval: required" starts only when every
// one of its clusters has an approval of exactly what it is about to
// get. A different render needs a new approval: nothing carries over to
// what nobody reviewed.
package approval

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/digest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// Namespace is where approvals are kept, beside the apps' sets.
const Namespace = inventory.Namespace

// FieldManager writes the approvals.
const FieldManager = "kubectl-fleet"

// Name is the ConfigMap that holds fleet's approvals on a cluster.
func Name(fleet string) string { return "approval." + fleet }

// Approval is who approved which render of an app, and when.
type Approval struct {
	App    string    `json:"app"`
	Digest string    `json:"digest"`
	By     string    `json:"by"`
	At     time.Time `json:"at"`
}

// Read reads fleet's approvals on the cluster of client, by app.
func Read(ctx context.Context, client *kube.Client, fleet string) (map[string]Approval, error) {
	cm, err := kube.ConfigMap(ctx, client, Namespace, Name(fleet))
	if err != nil || cm == nil {
		return nil, err
	}
	out := map[string]Approval{}
	for app, v := range cm.Data {
		var a Approval
		if json.Unmarshal([]byte(v), &a) == nil {
			a.App = app
			out[app] = a
		}
	}
	return out, nil
}

// Check says, for each of results (one cluster's renders, an app each)
// that its approvals do not approve, why: "web sha256:1a2b… is not
// approved (approved: sha256:9f8e… by alice 2h ago)"; none when all are.
func Check(results []render.Result, approvals map[string]Approval, key digest.Key, now time.Time) []string {
	var out []string
	for _, res := range results {
		d := digest.Render(res.Objects, key)
		a, ok := approvals[res.App]
		switch {
		case ok && a.Digest == d && digest.Comparable(d):
		case ok:
			out = append(out, fmt.Sprintf("%s %s is not approved (approved: %s by %s %s ago)", res.App, revision.ShortDigest(d), revision.ShortDigest(a.Digest), a.By, duration.HumanDuration(now.Sub(a.At))))
		default:
			out = append(out, fmt.Sprintf("%s %s is not approved", res.App, revision.ShortDigest(d)))
		}
	}
	return out
}

// Approve records, on the cluster of client, the approval by the user
// the cluster authenticates of each of results (one cluster's renders,
// an app each), beside its other apps' approvals, and returns them. The
// cluster's digest key is made when it has none, as a first apply would.
func Approve(ctx context.Context, client *kube.Client, fleet string, results []render.Result, now time.Time) ([]Approval, error) {
	if err := client.EnsureNamespace(ctx, Namespace, FieldManager); err != nil {
		return nil, err
	}
	key, err := digest.Ensure(ctx, client, FieldManager)
	if err != nil {
		return nil, err
	}
	by := revision.User(ctx, client)
	data := map[string]string{}
	var out []Approval
	for _, res := range results {
		a := Approval{App: res.App, Digest: digest.Render(res.Objects, key), By: by, At: now.UTC().Truncate(time.Second)}
		b, err := json.Marshal(a)
		if err != nil {
			return nil, err
		}
		data[res.App], out = string(b), append(out, a)
	}
	slices.SortFunc(out, func(a, b Approval) int { return strings.Compare(a.App, b.App) })
	return out, kube.MergeConfigMap(ctx, client, Namespace, Name(fleet), data, FieldManager)
}

// Fleet approves, on every cluster of r (Parallel at once), what r
// renders for it. It returns each cluster's outcome and its approvals.
func Fleet(ctx context.Context, conn kube.Connector, r *rendered.Set, parallel int, now time.Time) ([]runner.Outcome, map[string][]Approval) {
	var mu sync.Mutex
	out := map[string][]Approval{}
	outcomes := kube.Each(ctx, conn, r.Fleet, r.Clusters, parallel, func(ctx context.Context, c *fleet.Cluster, client *kube.Client) error {
		approved, err := Approve(ctx, client, r.Fleet.Metadata.Name, r.Of(c.Name), now)
		mu.Lock()
		out[c.Name] = approved
		mu.Unlock()
		return err
	})
	return outcomes, out
}
