package subst_test

import (
	"fmt"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/subst"
)

func ExampleSubstitute() {
	out, err := subst.Substitute("image: ${registry}/web:${tag:=1.0} # $${literal}", map[string]string{"registry": "ghcr.io/acme"})
	fmt.Println(out, err)
	// Output: image: ghcr.io/acme/web:1.0 # ${literal} <nil>
}
