package apply_test

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
)

// Applying an app's objects to one cluster, pruning what is no longer
// rendered and waiting until everything is healthy. (It needs a cluster,
// so it is compiled, not run.)
func ExampleRun() {
	client, err := kube.NewClient(nil /* the cluster's own ConfigFlags: kube.ForCluster(...) */)
	if err != nil {
		return
	}
	var objects []*unstructured.Unstructured // rendered by package render
	err = apply.Run(context.Background(), client, apply.Config{
		App: "web", Version: "v0.1.0", Objects: objects,
		Prune: true, Wait: true, Timeout: 5 * time.Minute, Concurrency: 32,
		Report: func(ch apply.Change) { fmt.Println(ch.Ref, ch.Action, ch.Err) },
	})
	fmt.Println(err)
}
