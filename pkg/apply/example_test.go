package apply_test

import (
	"context"
	"fmt"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
)

// An empty render (a kustomization whose resources were all commented out,
// say) never prunes every object of an app, unless asked: Run refuses
// before sending anything to the cluster.
func ExampleRun() {
	client := &kube.Client{} // kube.NewClient(kube.ForCluster(...)) for a real cluster
	err := apply.Run(context.Background(), client, apply.Config{
		App: "web", Version: "v0.1.0", Objects: nil, Prune: true,
		Report: func(ch apply.Change) { fmt.Println(ch.Ref, ch.Action, ch.Err) },
	})
	fmt.Println(err)
	// Output:
	// the render is empty: --prune would delete every object of the app; refusing without --allow-empty
}
