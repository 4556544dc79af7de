package render_test

import (
	"context"
	"fmt"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
)

func ExampleEngine_Render() {
	var targets []render.Target
	for _, c := range []struct{ name, group string }{{"staging-eu", "staging"}, {"prod-us", "production"}, {"prod-eu", "production"}} {
		targets = append(targets, render.Target{
			Cluster: render.Cluster{Name: c.name, Group: c.group, Attributes: map[string]any{"replicas": 2, "debug": false, "tags": "x"}},
			App:     "web",
			Source:  render.Source{Type: render.Kustomize, Path: "testdata/lookup", Namespace: "web"},
		})
	}
	e := &render.Engine{}
	for _, r := range e.Render(context.Background(), targets) {
		fmt.Println(r.Cluster.Name, r.Objects[0].GetAnnotations()["overlay"], len(r.Objects), r.Err)
	}
	fmt.Println("kustomize builds:", e.Renders())
	// Output:
	// staging-eu staging 2 <nil>
	// prod-us prod-us 2 <nil>
	// prod-eu root 2 <nil>
	// kustomize builds: 3
}
