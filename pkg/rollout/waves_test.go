package rollout

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/kubectl-fleet/kubectl-fleet/internal/kubetest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/approval"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/pause"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// renderedFleet is the fleet file doc with app web, a ConfigMap, rendered for
// every cluster, each an in-memory cluster.
func renderedFleet(t *testing.T, doc string) (*rendered.Set, clusters) {
	t.Helper()
	f, err := fleet.Parse([]byte(doc), "fleet.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	set := &rendered.Set{Fleet: f}
	cs := clusters{}
	for i := range f.Clusters {
		c := &f.Clusters[i]
		set.Clusters = append(set.Clusters, c)
		cs[c.Name] = kubetest.New(t)
		cs[c.Name].Put(kubetest.Object("v1", "Namespace", "", "default"))
		set.Results = append(set.Results, render.Result{Target: render.Target{Cluster: render.ClusterOf(f, c), App: "web"}, Objects: []*unstructured.Unstructured{kubetest.Object("v1", "ConfigMap", "default", "web")}})
	}
	return set, cs
}

// refuse makes cluster c refuse web's apply.
func refuse(cs clusters, c string) {
	cs[c].Inject(kubetest.Fault{Verb: "patch", Resource: "configmaps", Name: "web", Err: apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "web", errors.New("RBAC"))})
}

// byCluster is each outcome's state and wave, by cluster.
func byCluster(outcomes []runner.Outcome) map[string]string {
	out := map[string]string{}
	for _, oc := range outcomes {
		out[oc.Cluster] = string(oc.State) + " in " + oc.Wave
	}
	return out
}

// A canary batch that fails holds the rest of its group: in the run (the
// batch is a wave of its own) and in a later run that selects the rest
// alone (the promotion rule holds between batches as between groups).
func TestEngineCanaryBatchHoldsItsGroup(t *testing.T) {
	set, cs := renderedFleet(t, `apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: shop}
groups:
  - name: production
    maxFailures: 50%
    batches:
      - {selector: canary=true, name: canary}
      - 100%
clusters:
  - {name: p3, group: production, context: p3}
  - {name: p2, group: production, context: p2}
  - {name: p1, group: production, context: p1, labels: {canary: "true"}}
apps:
  - {name: web, manifests: .}
`)
	refuse(cs, "p1")
	outcomes, _ := run(t, set, cs, Options{})
	want := map[string]string{"p1": "failed in production/canary", "p2": "not started in production/2", "p3": "not started in production/2"}
	if got := byCluster(outcomes); !maps.Equal(got, want) {
		t.Errorf("first run: %v, want %v", got, want)
	}
	// maxFailures 50% of 3 is 1: the canary's failure is within the
	// group's budget, but the rest waits for a verified canary.
	rest := set.Only(map[string]bool{"p2": true, "p3": true})
	outcomes, events := run(t, rest, cs, Options{Promote: set.Results})
	if got := byCluster(outcomes); got["p2"] != "not started in production/2" || got["p3"] != "not started in production/2" {
		t.Errorf("second run: %v", got)
	}
	if !slices.ContainsFunc(events, func(ev Event) bool {
		w, ok := ev.(WaveEvent)
		return ok && w.Wave == "production/2" && slices.ContainsFunc(w.Reasons, func(r string) bool { return strings.HasPrefix(r, "p1 ") })
	}) {
		t.Errorf("no wave event says p1 holds production/2: %+v", events)
	}
	for _, c := range []string{"p2", "p3"} {
		if cs[c].Live(kubetest.Object("v1", "ConfigMap", "default", "web")) != nil {
			t.Errorf("%s was written to", c)
		}
	}
}

// Two tracks (after:): a failure in one holds only what comes after it
// in that track; the other completes.
func TestEngineTracks(t *testing.T) {
	set, cs := renderedFleet(t, `apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: shop}
groups:
  - {name: eu-staging, after: []}
  - {name: eu-prod, after: [eu-staging]}
  - {name: us-staging, after: []}
  - {name: us-prod, after: [us-staging]}
clusters:
  - {name: es, group: eu-staging, context: es}
  - {name: ep, group: eu-prod, context: ep}
  - {name: us, group: us-staging, context: us}
  - {name: up, group: us-prod, context: up}
apps:
  - {name: web, manifests: .}
`)
	refuse(cs, "es")
	outcomes, _ := run(t, set, cs, Options{})
	want := map[string]string{"es": "failed in eu-staging", "ep": "not started in eu-prod", "us": "succeeded in us-staging", "up": "succeeded in us-prod"}
	if got := byCluster(outcomes); !maps.Equal(got, want) {
		t.Errorf("outcomes %v, want %v", got, want)
	}
}

// TestWaves: a selection keeps every cluster in the batch it is in
// whatever else is selected, percentages are of the whole group, and a
// wave needs its group's earlier batches and its upstream groups' waves
// only.
func TestWaves(t *testing.T) {
	set, _ := renderedFleet(t, `apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: shop}
groups:
  - {name: stg}
  - name: prod
    maxParallel: 50%
    maxFailures: 25%
    batches: [1, 50%]
  - {name: other, after: []}
clusters:
  - {name: s, group: stg, context: s}
  - {name: p4, group: prod, context: p4}
  - {name: p3, group: prod, context: p3}
  - {name: p2, group: prod, context: p2}
  - {name: p1, group: prod, context: p1}
  - {name: o, group: other, context: o}
apps:
  - {name: web, manifests: .}
`)
	f := set.Fleet
	var sel []*fleet.Cluster
	for _, n := range []string{"p3", "o"} {
		sel = append(sel, f.Cluster(n))
	}
	ws := Waves(f, sel)
	want := []runner.Wave{
		{Name: "prod/rest", Group: "prod", Batch: "rest", Clusters: []string{"p3"}, MaxParallel: 2, MaxFailures: 1, Needs: []string{}},
		{Name: "other", Group: "other", Clusters: []string{"o"}, Needs: []string{}},
	}
	if diff := cmp.Diff(want, ws, cmpopts.IgnoreFields(runner.Wave{}, "Brake", "After")); diff != "" {
		t.Errorf("waves of p3 and o (-want +got):\n%s", diff)
	}
	all := Waves(f, set.Clusters)
	var got []string
	for _, w := range all {
		got = append(got, w.Name+" needs "+strings.Join(w.Needs, ","))
	}
	if diff := cmp.Diff([]string{"stg needs ", "prod/1 needs stg", "prod/2 needs stg,prod/1", "prod/rest needs stg,prod/1,prod/2", "other needs "}, got); diff != "" {
		t.Errorf("needs (-want +got):\n%s", diff)
	}
	// What the promotion rule must read before p3's batch: staging, and
	// prod's earlier batches (p1, p2), rendered though not selected.
	var up []string
	for _, c := range upstream(f, ws, sel) {
		up = append(up, c.Name)
	}
	if diff := cmp.Diff([]string{"s", "p1", "p2"}, up); diff != "" {
		t.Errorf("upstream (-want +got):\n%s", diff)
	}
}

// Deploy windows: outside them a group's waves do not start (and say
// when the windows open next), the groups before still do; with
// IgnoreWindows they start, and their revisions say it.
func TestEngineWindows(t *testing.T) {
	set, cs := renderedFleet(t, `apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: shop}
groups:
  - name: staging
  - name: production
    windows:
      - {kind: allow, schedule: "0 9 * * 1-5", duration: 8h, timeZone: Europe/Berlin}
clusters:
  - {name: stg, group: staging, context: stg}
  - {name: prod, group: production, context: prod}
apps:
  - {name: web, manifests: .}
`)
	saturday := func() time.Time { return time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC) }
	outcomes, events := run(t, set, cs, Options{Now: saturday})
	if got := byCluster(outcomes); got["stg"] != "succeeded in staging" || got["prod"] != "not started in production" {
		t.Errorf("outcomes %v", got)
	}
	if !slices.ContainsFunc(events, func(ev Event) bool {
		w, ok := ev.(WaveEvent)
		return ok && w.Wave == "production" && strings.Contains(strings.Join(w.Reasons, ""), "they open next at 2026-11-30T09:00:00+01:00")
	}) {
		t.Errorf("no wave event says when production's windows open: %+v", events)
	}
	outcomes, events = run(t, set, cs, Options{Now: saturday, IgnoreWindows: true})
	if got := byCluster(outcomes); got["prod"] != "succeeded in production" {
		t.Errorf("--ignore-windows: %v", got)
	}
	if !slices.ContainsFunc(events, func(ev Event) bool {
		r, ok := ev.(RevisionEvent)
		return ok && r.Cluster == "prod" && r.Description == "apply outside the deploy windows, --ignore-windows"
	}) {
		t.Errorf("prod's revision does not say the windows were ignored: %+v", events)
	}
}

// A pause: the paused cluster gets no write (its apply stops before the
// first, and the cluster is skipped, not failed) and the groups after it
// are held, saying who paused it and why; resumed, the next run goes
// through.
func TestEnginePause(t *testing.T) {
	set, cs := twoGroups(t)
	ctx := context.Background()
	if err := pause.Set(ctx, cs["stg"].Client, "shop", nil, pause.Pause{By: "alice", At: time.Now().Add(-10 * time.Minute), Reason: "investigating latency"}); err != nil {
		t.Fatal(err)
	}
	outcomes, events := run(t, set, cs, Options{})
	if got := byCluster(outcomes); got["stg"] != "skipped in staging" || got["prod"] != "not started in production" {
		t.Errorf("outcomes %v", got)
	}
	for _, c := range []string{"stg", "prod"} {
		if cs[c].Live(kubetest.Object("v1", "ConfigMap", "default", "web")) != nil {
			t.Errorf("%s was written to", c)
		}
	}
	if !slices.ContainsFunc(events, func(ev Event) bool {
		w, ok := ev.(WaveEvent)
		return ok && w.Wave == "production" && slices.Contains(w.Reasons, `stg paused 10m ago by alice: "investigating latency"`)
	}) {
		t.Errorf("no wave event says stg's pause holds production: %+v", events)
	}
	// A pause of another app does not hold web.
	if _, err := pause.Lift(ctx, cs["stg"].Client, "shop", nil); err != nil {
		t.Fatal(err)
	}
	if err := pause.Set(ctx, cs["stg"].Client, "shop", []string{"db"}, pause.Pause{By: "bob", At: time.Now(), Reason: "migration"}); err != nil {
		t.Fatal(err)
	}
	outcomes, _ = run(t, set, cs, Options{})
	if got := byCluster(outcomes); got["stg"] != "succeeded in staging" || got["prod"] != "succeeded in production" {
		t.Errorf("with db paused, web: %v", got)
	}
	if ps, err := pause.Read(ctx, cs["stg"].Client, "shop"); err != nil || len(ps) != 1 || ps[0].App != "db" {
		t.Errorf("pauses left: %+v, %v", ps, err)
	}
}

// An approval binds to a release: production (approval: required) waits
// until its cluster has an approval of exactly its render; approved, it
// goes; a new render needs a new approval.
func TestEngineApproval(t *testing.T) {
	alice, _, alicePub, err := approval.GenerateKey("alice")
	if err != nil {
		t.Fatal(err)
	}
	set, cs := renderedFleet(t, `apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: shop}
groups:
  - name: staging
  - {name: production, approval: required}
clusters:
  - {name: stg, group: staging, context: stg}
  - {name: prod, group: production, context: prod}
apps:
  - {name: web, manifests: .}
approvers:
  - {name: alice, publicKey: `+alicePub+`}
`)
	outcomes, events := run(t, set, cs, Options{})
	if got := byCluster(outcomes); got["stg"] != "succeeded in staging" || got["prod"] != "not started in production" {
		t.Fatalf("unapproved: %v", got)
	}
	var awaiting *AwaitingApproval
	if !errors.As(outcomes[1].Err, &awaiting) || !slices.ContainsFunc(events, func(ev Event) bool {
		w, ok := ev.(WaveEvent)
		return ok && w.State == "awaiting approval" && strings.HasPrefix(strings.Join(w.Reasons, ""), "prod: web sha256:")
	}) {
		t.Fatalf("prod's error %v; events %+v", outcomes[1].Err, events)
	}
	ctx := context.Background()
	// An approval no approver signed (written by whoever may write the
	// ConfigMap) does not count.
	mallory, _, _, err := approval.GenerateKey("alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := approval.Approve(ctx, cs["prod"].Client, "shop", "prod", set.Of("prod"), time.Now(), mallory); err != nil {
		t.Fatal(err)
	}
	if outcomes, _ = run(t, set, cs, Options{}); byCluster(outcomes)["prod"] != "not started in production" || !strings.Contains(outcomes[1].Err.Error(), "signed by none of the fleet's approvers") {
		t.Fatalf("approved with a key not the fleet's: %v, %v", byCluster(outcomes), outcomes[1].Err)
	}
	if _, err := approval.Approve(ctx, cs["prod"].Client, "shop", "prod", set.Of("prod"), time.Now(), alice); err != nil {
		t.Fatal(err)
	}
	if outcomes, _ = run(t, set, cs, Options{}); byCluster(outcomes)["prod"] != "succeeded in production" {
		t.Fatalf("approved: %v", byCluster(outcomes))
	}
	// Release B: the approval of A does not let it through.
	b := kubetest.Object("v1", "ConfigMap", "default", "web")
	b.Object["data"] = map[string]any{"release": "b"}
	for i := range set.Results {
		set.Results[i].Objects = []*unstructured.Unstructured{b}
	}
	outcomes, _ = run(t, set, cs, Options{})
	if got := byCluster(outcomes); got["prod"] != "not started in production" || !strings.Contains(outcomes[1].Err.Error(), "is not approved (approved: sha256:") {
		t.Errorf("release B: %v, %v", got, outcomes[1].Err)
	}
}
