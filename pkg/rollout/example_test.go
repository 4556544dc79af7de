package rollout_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/internal/kubetest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// conn is what a program that drives the engine gives it to reach the
// clusters (rollout.Connector): here in-memory ones, by name.
type conn map[string]*kubetest.Cluster

func (cs conn) Connect(_ context.Context, _ *fleet.Fleet, c *fleet.Cluster) (*kube.Client, error) {
	return cs[c.Name].Client, nil
}
func (conn) Idle(string)                                          {}
func (conn) Explain(_ context.Context, _ string, err error) error { return err }
func (conn) Kubeconfig(*fleet.Fleet, *fleet.Cluster) (string, func(), error) {
	return "", nil, errors.New("no kubeconfig here")
}

// The engine's face, as docs/development.md ("The rollout engine as a
// library") shows it, written from outside the package so that the
// compiler pins every name it uses: a rendered set, an Engine over a
// Connector, Run with Options and one sink, the outcomes in wave order,
// and Diff, the same engine's look without writes.
func TestEngineAsALibrary(t *testing.T) {
	f, err := fleet.Parse([]byte(`apiVersion: fleet/v1alpha1
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
`), "fleet.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cs := conn{}
	for _, c := range f.Clusters {
		cs[c.Name] = kubetest.New(t)
		cs[c.Name].Put(kubetest.Object("v1", "Namespace", "", "default"))
	}
	// A run consumes its set (each cluster's render is let go once its
	// work is over): each call is given its own.
	renderAll := func() *rendered.Set {
		set := &rendered.Set{Fleet: f}
		for i := range f.Clusters {
			c := &f.Clusters[i]
			set.Clusters = append(set.Clusters, c)
			set.Results = append(set.Results, render.Result{Target: render.Target{Cluster: render.ClusterOf(f, c), App: "web"}, Objects: []*unstructured.Unstructured{kubetest.Object("v1", "ConfigMap", "default", "web")}})
		}
		return set
	}

	// Looked at first: web would be created on both clusters.
	d := (&rollout.Engine{Connector: cs}).Diff(context.Background(), renderAll(), rollout.DiffOptions{Parallel: 2, Concurrency: 4}, func(rollout.Event) {})
	for _, name := range []string{"stg", "prod"} {
		if s := d.Summaries[name]; s.Create != 1 || !s.Differs() || s.Prune != 0 {
			t.Errorf("%s: diff %+v, want web created", name, s)
		}
	}

	var (
		mu    sync.Mutex
		lines []string
	)
	sink := func(ev rollout.Event) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf("%s: %s", ev.Where(), ev.Text()))
	}
	set := renderAll()
	e := &rollout.Engine{Connector: cs, Locks: rollout.Locks{Duration: time.Minute}, Log: io.Discard}
	outcomes := e.Run(context.Background(), set, rollout.Options{Prune: true, Parallel: 2, Concurrency: 4, Promote: set.Results}, sink)
	if len(outcomes) != 2 || outcomes[0].Cluster != "stg" || outcomes[1].Cluster != "prod" {
		t.Fatalf("outcomes %+v: want stg, then prod", outcomes)
	}
	for _, oc := range outcomes {
		if oc.State != runner.Succeeded {
			t.Errorf("%s: %s, %v", oc.Cluster, oc.State, oc.Err)
		}
	}
	all := strings.Join(lines, "\n")
	for _, want := range []string{"stg: revision 1 verified", "prod: revision 1 verified"} {
		if !strings.Contains(all, want) {
			t.Errorf("the sink was not told %q:\n%s", want, all)
		}
	}

}
