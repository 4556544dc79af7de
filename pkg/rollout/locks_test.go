package rollout

import (
	"bytes"
	"context"
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube/kubetest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/lock"
)

// A cluster's locks go as soon as its work is over (ReleaseCluster), the
// others' stay held until theirs is, or the command ends (Release).
func TestReleaseCluster(t *testing.T) {
	ctx := context.Background()
	a, b := kubetest.New(t), kubetest.New(t)
	var l Locks
	for name, c := range map[string]*kubetest.Cluster{"a": a, "b": b} {
		for _, app := range []string{"web", "db"} {
			if err := l.Acquire(ctx, c.Client, name, app, app, false, func(Event) {}, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	held := func(c *kubetest.Cluster, app string) bool {
		info, err := lock.Get(ctx, c.Client, app)
		if err != nil {
			t.Fatal(err)
		}
		return info != nil
	}
	var errOut bytes.Buffer
	l.ReleaseCluster(ctx, "a", &errOut)
	if held(a, "web") || held(a, "db") || !held(b, "web") || !held(b, "db") {
		t.Errorf("after a's work: a web %v db %v, b web %v db %v", held(a, "web"), held(a, "db"), held(b, "web"), held(b, "db"))
	}
	l.Release(ctx, &errOut)
	if held(b, "web") || held(b, "db") || errOut.Len() > 0 {
		t.Errorf("after the command: b web %v db %v; %s", held(b, "web"), held(b, "db"), errOut.String())
	}
}
