package runner_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// A staging failure stops the rollout before production.
func ExampleRun() {
	waves := []runner.Wave{
		{Name: "staging", Clusters: []string{"staging-eu"}},
		{Name: "production", Clusters: []string{"prod-eu", "prod-us"}, MaxParallel: 1},
	}
	outcomes := runner.Run(context.Background(), waves, 10, func(_ context.Context, cluster string) error {
		if cluster == "staging-eu" {
			return errors.New("deployment.apps/web: not healthy")
		}
		return nil
	})
	for _, o := range outcomes {
		fmt.Println(o.Cluster, o.State)
	}
	// Output:
	// staging-eu failed
	// prod-eu not started
	// prod-us not started
}

// Clusters render in parallel and print in order, each as soon as the
// ones before it are printed.
func ExampleOrdered() {
	clusters := []string{"staging-eu", "prod-eu", "prod-us"}
	err := runner.Ordered(context.Background(), len(clusters), 2, 4, func(_ context.Context, i int) string {
		return "# Cluster: " + clusters[i]
	}, func(i int, text string) error {
		fmt.Println(text)
		return nil
	})
	fmt.Println(err)
	// Output:
	// # Cluster: staging-eu
	// # Cluster: prod-eu
	// # Cluster: prod-us
	// <nil>
}
