package rollout

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-fleet/kubectl-fleet/internal/kubetest"
	"github.com/kubectl-fleet/kubectl-fleet/internal/testfiles"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// clusters is a Connector over in-memory clusters, by name: what a
// program that drives the engine gives it.
type clusters map[string]*kubetest.Cluster

func (cs clusters) Connect(_ context.Context, _ *fleet.Fleet, c *fleet.Cluster) (*kube.Client, error) {
	return cs[c.Name].Client, nil
}
func (clusters) Idle(string)                                          {}
func (clusters) Explain(_ context.Context, _ string, err error) error { return err }
func (clusters) Kubeconfig(*fleet.Fleet, *fleet.Cluster) (string, func(), error) {
	return "", nil, errors.New("no kubeconfig here")
}

// twoGroups is a fleet of stg (staging) and prod (production), each
// with app web, a ConfigMap, rendered.
func twoGroups(t *testing.T) (*rendered.Set, clusters) {
	t.Helper()
	return renderedFleet(t, `apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: shop}
groups:
  - name: staging
  - name: production
clusters:
  - {name: stg, group: staging, context: stg}
  - {name: prod, group: production, context: prod}
apps:
  - {name: web, manifests: .}
`)
}

// run runs the engine on set and returns the outcomes and the events.
func run(t *testing.T, set *rendered.Set, cs clusters, o Options) ([]runner.Outcome, []Event) {
	t.Helper()
	var (
		mu     sync.Mutex
		events []Event
	)
	e := &Engine{Connector: cs, Locks: Locks{Duration: time.Minute}}
	if o.Promote == nil {
		o.Promote = set.Results
	}
	o.Parallel, o.Concurrency = 2, 4
	outcomes := e.Run(context.Background(), set, o, func(ev Event) { mu.Lock(); events = append(events, ev); mu.Unlock() })
	return outcomes, events
}

// The engine as a library: a fleet in two groups goes out group by
// group, each cluster's apply said as events, its revision recorded
// with the verdict of its gates, and production only once staging
// verified the release.
func TestEngineRun(t *testing.T) {
	set, cs := twoGroups(t)
	outcomes, events := run(t, set, cs, Options{})
	if len(outcomes) != 2 || outcomes[0].Cluster != "stg" || outcomes[1].Cluster != "prod" {
		t.Fatalf("outcomes %+v; want stg then prod", outcomes)
	}
	for _, oc := range outcomes {
		if oc.State != runner.Succeeded {
			t.Errorf("%s: %s, %v", oc.Cluster, oc.State, oc.Err)
		}
		if cs[oc.Cluster].Live(kubetest.Object("v1", "ConfigMap", "default", "web")) == nil {
			t.Errorf("%s: the ConfigMap was not applied", oc.Cluster)
		}
		v, err := revision.VerificationOf(context.Background(), cs[oc.Cluster].Client, "web", 1)
		if err != nil || v.State != revision.Verified {
			t.Errorf("%s: revision 1 is %+v, %v; want verified", oc.Cluster, v, err)
		}
	}
	var said []string
	for _, ev := range events {
		switch ev := ev.(type) {
		case ObjectEvent:
			said = append(said, ev.Cluster+" "+ev.Text())
		case EndEvent:
			said = append(said, ev.Cluster+" end")
		}
	}
	if want := []string{"stg configmap/web created", "stg end", "prod configmap/web created", "prod end"}; !slices.Equal(said, want) {
		t.Errorf("events %q; want %q", said, want)
	}
	// Once its work is over a cluster's render is let go, unless the
	// promotion rule reads it for a later group (staging's).
	if stg, prod := set.Of("stg")[0].Objects, set.Of("prod")[0].Objects; len(stg) == 0 || prod != nil {
		t.Errorf("after the run stg holds %d objects, prod %d; want staging's kept, production's let go", len(stg), len(prod))
	}
}

// A staging cluster whose apply fails holds production back: it is not
// started, and nothing is written to it.
func TestEngineFailureHoldsLaterGroups(t *testing.T) {
	set, cs := twoGroups(t)
	cs["stg"].Inject(kubetest.Fault{Verb: "patch", Resource: "configmaps", Name: "web", Err: apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "web", errors.New("RBAC"))})
	outcomes, _ := run(t, set, cs, Options{})
	if len(outcomes) != 2 || outcomes[0].State != runner.Failed || outcomes[1].State != runner.NotStarted {
		t.Fatalf("outcomes %+v; want stg failed, prod not started", outcomes)
	}
	for _, r := range cs["prod"].Requests() {
		if r.Verb != "get" && r.Verb != "list" {
			t.Errorf("production was written to: %+v", r)
		}
	}
}

// Production is held while staging runs the release unverified (it went
// out with --skip-gates), in a later run that selects production alone:
// the promotion rule reads staging's release from the cluster.
func TestEngineHoldsWhatStagingDidNotVerify(t *testing.T) {
	set, cs := twoGroups(t)
	if outcomes, _ := run(t, set.Only(map[string]bool{"stg": true}), cs, Options{SkipGates: true}); outcomes[0].State != runner.Succeeded {
		t.Fatalf("staging: %+v", outcomes)
	}
	outcomes, events := run(t, set.Only(map[string]bool{"prod": true}), cs, Options{Promote: set.Results})
	if len(outcomes) != 1 || outcomes[0].State != runner.NotStarted {
		t.Fatalf("outcomes %+v; want prod not started", outcomes)
	}
	held := slices.ContainsFunc(events, func(ev Event) bool {
		w, ok := ev.(WaveEvent)
		return ok && w.Wave == "production" && w.State == "not started"
	})
	if !held || cs["prod"].Live(kubetest.Object("v1", "ConfigMap", "default", "web")) != nil {
		t.Errorf("production: held %v, events %+v", held, events)
	}
}

// Diff is the engine's look without writes: per cluster the same
// DiffEvent apply --diff says, its counts, and with Plan what apply
// --plan checks.
func TestEngineDiff(t *testing.T) {
	set, cs := twoGroups(t)
	run(t, set.Only(map[string]bool{"stg": true}), cs, Options{})
	var (
		mu    sync.Mutex
		kinds []string
	)
	e := &Engine{Connector: cs}
	d := e.Diff(context.Background(), set, DiffOptions{Plan: true, Parallel: 2, Concurrency: 4}, func(ev Event) {
		if de, ok := ev.(DiffEvent); ok {
			mu.Lock()
			for _, o := range de.Diffs {
				kinds = append(kinds, de.Cluster+" "+o.Ref+" "+o.Action.Planned())
			}
			mu.Unlock()
		}
	})
	slices.Sort(kinds)
	if want := []string{"prod configmap/web create", "stg configmap/web unchanged"}; !slices.Equal(kinds, want) {
		t.Errorf("diffs %q; want %q", kinds, want)
	}
	if !d.Summaries["prod"].Differs() || d.Summaries["stg"].Differs() || len(d.Plans["prod"]) != 1 || d.Plans["prod"][0].Digest == "" {
		t.Errorf("summaries %+v, plans %+v", d.Summaries, d.Plans)
	}
	for _, r := range cs["prod"].Requests() {
		if r.Verb == "patch" && !r.DryRun || r.Verb == "create" || r.Verb == "delete" {
			t.Errorf("diff wrote to prod: %+v", r)
		}
	}
	for _, c := range []string{"stg", "prod"} {
		if objs := set.Of(c)[0].Objects; objs != nil {
			t.Errorf("%s's render is held after its diff: %d objects", c, len(objs))
		}
	}
}

// What a check prints is said line by line, a last line without a
// newline included, before the check's outcome.
func TestLinesFlushBeforeTheCheckEnds(t *testing.T) {
	var said []string
	out := &lines{say: func(l string) { said = append(said, l) }}
	_, _ = out.Write([]byte("one\ntw"))
	_, _ = out.Write([]byte("o\nthree"))
	if !slices.Equal(said, []string{"one", "two"}) {
		t.Fatalf("before the flush: %q", said)
	}
	out.flush()
	out.flush()
	if !slices.Equal(said, []string{"one", "two", "three"}) {
		t.Errorf("after: %q", said)
	}
}

// Delete deletes an app's objects and set from each cluster in the
// fleet's waves, locked, and says each object's deletion.
func TestEngineDelete(t *testing.T) {
	set, cs := twoGroups(t)
	run(t, set, cs, Options{})
	app := rendered.App{Name: "web", Clusters: set.Clusters}
	var (
		mu      sync.Mutex
		deleted []string
	)
	e := &Engine{Connector: cs, Locks: Locks{Duration: time.Minute}}
	outcomes := e.Delete(context.Background(), set.Fleet, set.Clusters, []rendered.App{app}, Options{Parallel: 2}, func(ev Event) {
		if o, ok := ev.(ObjectEvent); ok {
			mu.Lock()
			deleted = append(deleted, o.Cluster+" "+o.Object+" "+o.Word())
			mu.Unlock()
		}
	})
	if len(outcomes) != 2 || outcomes[0].State != runner.Succeeded || outcomes[1].State != runner.Succeeded {
		t.Fatalf("outcomes %+v", outcomes)
	}
	if want := []string{"stg configmap/web deleted", "prod configmap/web deleted"}; !slices.Equal(deleted, want) {
		t.Errorf("said %q; want %q", deleted, want)
	}
	for name, c := range cs {
		if c.Live(kubetest.Object("v1", "ConfigMap", "default", "web")) != nil {
			t.Errorf("%s: the ConfigMap is still there", name)
		}
	}
}

// A run holds the renders of the clusters in flight: those that wait
// for their turn are let go (shed) and made again when it comes, the
// same, each cluster applied with its own variables.
func TestEngineShedsWhatWaits(t *testing.T) {
	f, cs := ownCMFleet(t, "[{name: prod}]", "- {name: c1, group: prod, context: c1}\n- {name: c2, group: prod, context: c2}\n- {name: c3, group: prod, context: c3}\n- {name: c4, group: prod, context: c4}\n")
	set, err := rendered.Render(t.Context(), rendered.Config{Fleet: f, Engine: &render.Engine{}})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		waiting = -1 // objects held by c3 and c4 when c1 started
	)
	e := &Engine{Connector: cs, Locks: Locks{Duration: time.Minute}}
	outcomes := e.Run(t.Context(), set, Options{Parallel: 2, Concurrency: 4}, func(ev Event) {
		mu.Lock()
		defer mu.Unlock()
		if s, ok := ev.(StageEvent); ok && s.Cluster == "c1" && waiting < 0 {
			waiting = len(set.Results[2].Objects) + len(set.Results[3].Objects)
		}
	})
	if waiting != 0 {
		t.Errorf("when c1 started, c3 and c4 held %d objects; want their renders let go", waiting)
	}
	appliedOwn(t, cs, outcomes)
	// A diff one at a time: each cluster's render, made again when its
	// turn comes, is what was applied there.
	if set, err = rendered.Render(t.Context(), rendered.Config{Fleet: f, Engine: &render.Engine{}, Shed: func(cs []*fleet.Cluster) map[string]bool { return Past(cs, 1) }}); err != nil {
		t.Fatal(err)
	}
	if n := len(set.Results[1].Objects) + len(set.Results[3].Objects); n != 0 {
		t.Errorf("after the render, c2 and c4 hold %d objects", n)
	}
	var said []string
	d := e.Diff(t.Context(), set, DiffOptions{Parallel: 1, Concurrency: 4}, func(ev Event) {
		if de, ok := ev.(DiffEvent); ok {
			for _, o := range de.Diffs {
				said = append(said, de.Cluster+" "+o.Ref+" "+o.Action.Planned())
			}
		}
	})
	if want := []string{"c1 configmap/web unchanged", "c2 configmap/web unchanged", "c3 configmap/web unchanged", "c4 configmap/web unchanged"}; !slices.Equal(said, want) {
		t.Errorf("diffs %q; want %q (outcomes %+v)", said, want, d.Outcomes)
	}
}

// The clusters whose renders a rollout lets go from the render on: past
// the first --parallel in wave order, unless the promotion rule reads
// them (a group or a batch a later wave waits for), which it does only
// in a gated run.
func TestWaitingClusters(t *testing.T) {
	set, _ := renderedFleet(t, `apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: shop}
groups:
  - {name: stg}
  - name: prod
    batches: [1, 100%]
clusters:
  - {name: s1, group: stg, context: s1}
  - {name: s2, group: stg, context: s2}
  - {name: p1, group: prod, context: p1}
  - {name: p2, group: prod, context: p2}
  - {name: p3, group: prod, context: p3}
apps:
  - {name: web, manifests: .}
`)
	gated := Options{Parallel: 1}
	if !gated.Gated() {
		t.Fatal("the options are not gated")
	}
	for _, tt := range []struct {
		name string
		o    Options
		want []string
	}{
		{"gated: staging and the canary batch are read", gated, []string{"p2", "p3"}},
		{"not gated", Options{Parallel: 1, SkipGates: true}, []string{"p1", "p2", "p3", "s2"}},
		{"every cluster at once", Options{Parallel: 5}, []string{}},
	} {
		got := slices.Sorted(maps.Keys(waiting(set.Fleet, set.Clusters, tt.o)))
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v; want %v", tt.name, got, tt.want)
		}
	}
	// status reads one at a time too: the clusters the promotion notes
	// read keep their renders.
	if got := slices.Sorted(maps.Keys(Unread(set.Fleet, set.Clusters, 1))); !slices.Equal(got, []string{"p2", "p3"}) {
		t.Errorf("a status one at a time lets go of %v; want [p2 p3]", got)
	}
	if got := Unread(set.Fleet, set.Clusters, 5); len(got) != 0 {
		t.Errorf("a status of every cluster at once lets go of %v; want none", got)
	}
}

// A gated rollout prepared ten at a time, here one: production's renders
// are let go from the render on, staging's are kept for the promotion
// rule, and production, once staging verified the release, is applied
// with each cluster's own render made again.
func TestPrepareShedsWhatPromotionDoesNotRead(t *testing.T) {
	f, cs := ownCMFleet(t, "[{name: stg}, {name: prod}]", "- {name: s1, group: stg, context: s1}\n- {name: s2, group: stg, context: s2}\n"+
		"- {name: p1, group: prod, context: p1}\n- {name: p2, group: prod, context: p2}\n- {name: p3, group: prod, context: p3}\n")
	e := &Engine{Connector: cs, Locks: Locks{Duration: time.Minute}}
	o := Options{Parallel: 1, Concurrency: 4}
	set, err := e.Prepare(t.Context(), rendered.Config{Fleet: f, Engine: &render.Engine{}}, &o, true)
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]bool{}
	for _, r := range set.Results {
		held[r.Cluster.Name] = r.Objects != nil
	}
	if want := map[string]bool{"s1": true, "s2": true, "p1": false, "p2": false, "p3": false}; !maps.Equal(held, want) {
		t.Errorf("after the render, holding objects: %v; want %v", held, want)
	}
	appliedOwn(t, cs, e.Run(t.Context(), set, o, func(Event) {}))
}

// ownCMFleet is a fleet of groups and clusters (fleet file lines), each
// cluster on an in-memory cluster of its own, with app web: a ConfigMap
// that carries its cluster's name.
func ownCMFleet(t *testing.T, groups, clustersYAML string) (*fleet.Fleet, clusters) {
	t.Helper()
	dir := t.TempDir()
	testfiles.Write(t, dir, map[string]string{
		"fleet.yaml":  "apiVersion: fleet/v1alpha1\nkind: Fleet\nmetadata: {name: shop}\ngroups: " + groups + "\nclusters:\n" + clustersYAML + "apps:\n- {name: web, manifests: web}\n",
		"web/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, namespace: default}\ndata: {cluster: '${FLEET_CLUSTER_NAME}'}\n",
	})
	f, err := fleet.Load(filepath.Join(dir, "fleet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cs := clusters{}
	for _, c := range f.Clusters {
		cs[c.Name] = kubetest.New(t)
		cs[c.Name].Put(kubetest.Object("v1", "Namespace", "", "default"))
	}
	return f, cs
}

// appliedOwn checks that every cluster succeeded with its own render.
func appliedOwn(t *testing.T, cs clusters, outcomes []runner.Outcome) {
	t.Helper()
	for _, oc := range outcomes {
		if oc.State != runner.Succeeded {
			t.Errorf("%s: %s, %v", oc.Cluster, oc.State, oc.Err)
			continue
		}
		live := cs[oc.Cluster].Live(kubetest.Object("v1", "ConfigMap", "default", "web"))
		if got, _, _ := unstructured.NestedString(live.Object, "data", "cluster"); got != oc.Cluster {
			t.Errorf("%s: applied data.cluster %q", oc.Cluster, got)
		}
	}
}
