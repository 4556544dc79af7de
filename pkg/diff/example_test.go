package diff_test

import (
	"fmt"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/diff"
)

func ExampleUnified() {
	live := "kind: Deployment\nspec:\n  replicas: 1\n"
	merged := "kind: Deployment\nspec:\n  replicas: 3\n"
	fmt.Print(diff.Unified("live/prod-eu/Deployment.apps/web/web", "merged/prod-eu/Deployment.apps/web/web", live, merged, 3))
	// Output:
	// --- live/prod-eu/Deployment.apps/web/web
	// +++ merged/prod-eu/Deployment.apps/web/web
	// @@ -1,3 +1,3 @@
	//  kind: Deployment
	//  spec:
	// -  replicas: 1
	// +  replicas: 3
}
