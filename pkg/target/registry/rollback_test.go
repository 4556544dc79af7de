package registry

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/internal/registrytest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/digest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
)

// A delivered cluster's rollback goes back to the artifact a revision
// records only when what it holds is that revision's render (its
// objects' digest, as recorded when it was published, survives the
// artifact's packing); a record edited to name another artifact is
// refused, naming the record.
func TestChooseChecksTheArtifact(t *testing.T) {
	d, reg := registrytest.Delivery(t)
	ctx := context.Background()
	deployment := func(replicas int64) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "shop", "labels": map[string]any{"app": "web"}},
			"spec": map[string]any{"replicas": replicas, "template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": "web:1", "ports": []any{map[string]any{"containerPort": int64(8080)}}}}}}}}}
	}
	one, two := deployment(1), deployment(2)
	a1, a2 := registrytest.Pushed(t, reg, "web", one), registrytest.Pushed(t, reg, "web", two)
	h := publish.History{Current: 2, Revisions: []revision.Revision{
		{App: "web", Number: 1, Digest: digest.Render([]*unstructured.Unstructured{one}, nil), Artifact: a1.String()},
		{App: "web", Number: 2, Digest: digest.Render([]*unstructured.Unstructured{two}, nil), Artifact: a2.String()},
	}}
	c := &fleet.Cluster{Name: "edge-1", Delivery: d}
	f := &fleet.Fleet{Apps: []fleet.App{{Name: "web"}}}
	for _, tc := range []struct {
		name     string
		artifact string
		want     string // "" chooses revision 1
	}{
		{"the recorded artifact", a1.String(), ""},
		{"another artifact under revision 1", a2.String(), "revision 1 of edge-1.history names artifact " + publish.Short(a2.String()) + ", whose objects' digest is"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.Revisions[0].Artifact = tc.artifact
			if err := reg.SaveHistory(ctx, "web", "edge-1", h); err != nil {
				t.Fatal(err)
			}
			targets, _, err := Of(f).Choose(ctx, c, nil, 0)
			switch {
			case tc.want == "" && (err != nil || len(targets) != 1 || targets[0].Record.Artifact != a1.String()):
				t.Fatalf("targets %+v, %v", targets, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || len(targets) != 0):
				t.Fatalf("targets %+v, error %v, want %q", targets, err, tc.want)
			}
		})
	}
}
