package history

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/internal/kubetest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/pause"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
)

// Each revision of an app on a cluster, the current one marked, and
// the table of them.
func TestReadAndWriteTable(t *testing.T) {
	ctx := context.Background()
	c := kubetest.New(t)
	c.Put(kubetest.Object("v1", "Namespace", "", "web"))
	for _, v := range []string{"1", "2"} {
		cm := kubetest.Object("v1", "ConfigMap", "web", "conf")
		cm.Object["data"] = map[string]any{"v": v}
		if err := apply.Run(ctx, c.Client, apply.Config{App: "web", Fleet: "shop", Objects: []*unstructured.Unstructured{cm}, Report: func(apply.Change) {}, Concurrency: 2, Record: &apply.Record{Revision: revision.Revision{User: "alice", Description: "apply"}}}); err != nil {
			t.Fatal(err)
		}
	}
	f := &fleet.Fleet{Metadata: fleet.Metadata{Name: "shop"}, Clusters: []fleet.Cluster{{Name: "stg", Group: "staging"}}}
	if err := pause.Set(ctx, c.Client, "shop", []string{"web"}, pause.Pause{By: "bob", Reason: "INC-7"}); err != nil {
		t.Fatal(err)
	}
	outcomes, entries, pauses := Read(ctx, one{c.Client}, nil, f, []*fleet.Cluster{&f.Clusters[0]}, nil, 1)
	if len(outcomes) != 1 || outcomes[0].Err != nil {
		t.Fatalf("outcomes %+v", outcomes)
	}
	if ps := pauses["stg"]; len(ps) != 1 || ps[0].App != "web" || ps[0].By != "bob" || ps[0].Reason != "INC-7" {
		t.Errorf("pauses %+v", pauses)
	}
	got := entries["stg"]
	if len(got) != 2 || got[0].Current == got[1].Current || got[0].Group != "staging" {
		t.Fatalf("entries %+v", got)
	}
	var out, errOut bytes.Buffer
	if err := WriteTable(&out, &errOut, got); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "2 (current)") || !strings.Contains(out.String(), "alice") {
		t.Errorf("table:\n%s", out.String())
	}
	if err := WriteTable(&out, &errOut, nil); err != nil || errOut.String() != "No revisions found.\n" {
		t.Errorf("no entries: %v, %q", err, errOut.String())
	}
}

// one connects every cluster to the same client.
type one struct{ client *kube.Client }

func (o one) Connect(context.Context, *fleet.Fleet, *fleet.Cluster) (*kube.Client, error) {
	return o.client, nil
}
