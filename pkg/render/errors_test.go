package render

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The same render error on many clusters is said once, with the clusters.
func TestGroupErrors(t *testing.T) {
	target := func(cluster, app, msg string) error {
		return &TargetError{Cluster: cluster, App: app, Err: errors.New(msg)}
	}
	var errs []error
	for i := 1; i <= 8; i++ {
		errs = append(errs, target(fmt.Sprintf("c%d", i), "web", "undefined variable ${datasource}"))
	}
	// c4's cache fails twice the same way (a Helm chart, and its test
	// hooks): said of c4 once.
	errs = append(errs, target("c2", "db", "bad"), target("c3", "db", "bad"), target("c4", "cache", "worse"), target("c4", "cache", "worse"), errors.New("a line of its own"))
	want := []string{
		"clusters c1, c2, c3, c4, c5 and 3 more: app web: undefined variable ${datasource}",
		"clusters c2 and c3: app db: bad",
		"cluster c4: app cache: worse",
		"a line of its own",
	}
	if diff := cmp.Diff(want, GroupErrors(errs)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
