package rollout

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kubectl-fleet/kubectl-fleet/internal/registrytest"
	"github.com/kubectl-fleet/kubectl-fleet/internal/testfiles"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/pause"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollback"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/target/registry"
)

// A delivered cluster's artifact is signed at its wave, for it: when a
// pause holds every cluster that gets it, it stays unsigned; clusters
// with one render share one signature (the first's); a rollback signs
// nothing, and goes back to the artifact as its first release signed it.
func TestPublishedSigning(t *testing.T) {
	d, reg := registrytest.Delivery(t)
	dir, key := t.TempDir(), string(registrytest.SigningKey(t))
	write := func(v string) {
		testfiles.Write(t, dir, map[string]string{
			"fleet.yaml":  "apiVersion: fleet/v1alpha1\nkind: Fleet\nmetadata: {name: shop}\ngroups:\n- name: edge\n  delivery: {oci: \"" + d.OCI + "\", insecure: true, signing: {key: cosign.key}}\nclusters:\n- {name: e1, group: edge}\n- {name: e2, group: edge}\n- {name: e3, group: edge, attributes: {x: \"3\"}}\napps:\n- {name: web, manifests: web}\n",
			"web/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, namespace: default}\ndata: {v: \"" + v + "\", x: \"${x:=0}\"}\n",
			"cosign.key":  key,
		})
	}
	write("1")
	f, err := fleet.Load(filepath.Join(dir, "fleet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	// e3 is paused: its wave's gate says no.
	if outcomes, _ := (pause.Change{Fleet: f, Clusters: []*fleet.Cluster{&f.Clusters[2]}, Reason: "INC-1", Now: time.Now()}).Apply(ctx, nil, registry.Of(f)); len(outcomes) != 1 || outcomes[0].Err != nil {
		t.Fatalf("pause: %+v", outcomes)
	}
	run := func(set *rendered.Set, o Options) []runner.Outcome {
		t.Helper()
		o.Parallel, o.Concurrency = 3, 1
		return (&Engine{Connector: clusters{}}).Run(ctx, set, o, func(Event) {})
	}
	set, err := rendered.Render(ctx, rendered.Config{Fleet: f, Engine: &render.Engine{}})
	if err != nil {
		t.Fatal(err)
	}
	outcomes := run(set, Options{})
	if got := byCluster(outcomes); got["e1"] != "succeeded in edge" || got["e2"] != "succeeded in edge" || got["e3"] != "skipped in edge" {
		t.Fatalf("outcomes %v", got)
	}
	// e3's render, its own, was pushed and never signed.
	again, err := rendered.Render(ctx, rendered.Config{Fleet: f, Engine: &render.Engine{}})
	if err != nil {
		t.Fatal(err)
	}
	held, err := publish.Pack(again.Results[2].Objects, publish.Origin{})
	if err != nil {
		t.Fatal(err)
	}
	hd, _ := held.Digest()
	if _, err := reg.PullDigest(ctx, "web", hd.String()); err != nil {
		t.Fatalf("e3's artifact was not pushed: %v", err)
	}
	if claims := signedClaims(t, reg, hd); len(claims) != 0 {
		t.Fatalf("the artifact of e3, which a pause holds, is signed for %+v", claims)
	}
	first := tagOf(t, reg, "e1")
	claims := signedClaims(t, reg, first)
	if len(claims) != 1 || claims[0].Revision != 1 || claims[0].Cluster == "e3" {
		t.Fatalf("the first release's artifact is signed for %+v, want e1's or e2's revision 1, once", claims)
	}
	// A second release, then a rollback to the first.
	write("2")
	if set, err = rendered.Render(ctx, rendered.Config{Fleet: f, Engine: &render.Engine{}}); err != nil {
		t.Fatal(err)
	}
	set.Clusters = set.Clusters[:1] // e1
	set.Results = set.Results[:1]
	if got := byCluster(run(set, Options{})); got["e1"] != "succeeded in edge" || tagOf(t, reg, "e1") == first {
		t.Fatalf("second release: %v", got)
	}
	rollBack := func() map[string]string {
		chosen, results := rollback.Read(ctx, nil, registry.Of(f), f, []*fleet.Cluster{&f.Clusters[0]}, nil, 0, 1)
		return byCluster(run(&rendered.Set{Fleet: f, Clusters: []*fleet.Cluster{&f.Clusters[0]}, Results: results}, Options{Rollback: chosen}))
	}
	// Someone with push rights deletes the first release's signature:
	// the rollback refuses it, and signs nothing in its place.
	sig, _, err := reg.Resolve(ctx, "web", publish.SignatureTag(first))
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Untag(ctx, "web", publish.SignatureTag(first)); err != nil {
		t.Fatal(err)
	}
	second := tagOf(t, reg, "e1")
	if got := rollBack(); got["e1"] == "succeeded in edge" || tagOf(t, reg, "e1") != second || len(signedClaims(t, reg, first)) != 0 {
		t.Fatalf("rollback to an artifact whose signature was deleted: %v, e1 at %s, %d signatures", got, tagOf(t, reg, "e1"), len(signedClaims(t, reg, first)))
	}
	if err := reg.Tag(ctx, "web", publish.SignatureTag(first), sig); err != nil {
		t.Fatal(err)
	}
	if got := rollBack(); got["e1"] != "succeeded in edge" || tagOf(t, reg, "e1") != first {
		t.Fatalf("rollback: %v, e1 at %s, want %s", got, tagOf(t, reg, "e1"), first)
	}
	if after := signedClaims(t, reg, first); len(after) != len(claims) {
		t.Errorf("the rollback signed the artifact again: %+v, was %+v", after, claims)
	}
}

func tagOf(t *testing.T, reg publish.Registry, cluster string) v1.Hash {
	t.Helper()
	d, found, err := reg.Resolve(context.Background(), "web", cluster)
	if err != nil || !found {
		t.Fatalf("web:%s: %v %v", cluster, found, err)
	}
	return d
}

// signedClaims are the claims of d's signatures, in order.
func signedClaims(t *testing.T, reg publish.Registry, d v1.Hash) []publish.Claim {
	t.Helper()
	sigs, err := reg.Signatures(context.Background(), "web", d)
	if err != nil {
		t.Fatal(err)
	}
	var out []publish.Claim
	for _, s := range sigs {
		var p publish.Payload
		if err := json.Unmarshal(s.Payload, &p); err != nil {
			t.Fatal(err)
		}
		c, _ := publish.ClaimOf(p)
		out = append(out, c)
	}
	return out
}

// A tag that someone with push rights moved to the release's artifact
// before any gate said yes does not make the release a no-op: the
// revision is recorded and the artifact signed for it at its wave, as
// if the tag had been elsewhere.
func TestPublishedSignsATagMovedAhead(t *testing.T) {
	d, reg := registrytest.Delivery(t)
	dir := t.TempDir()
	testfiles.Write(t, dir, map[string]string{
		"fleet.yaml":  "apiVersion: fleet/v1alpha1\nkind: Fleet\nmetadata: {name: shop}\ngroups:\n- name: edge\n  delivery: {oci: \"" + d.OCI + "\", insecure: true, signing: {key: cosign.key}}\nclusters:\n- {name: e1, group: edge}\napps:\n- {name: web, manifests: web}\n",
		"web/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, namespace: default}\ndata: {v: \"1\"}\n",
		"cosign.key":  string(registrytest.SigningKey(t)),
	})
	f, err := fleet.Load(filepath.Join(dir, "fleet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	set, err := rendered.Render(ctx, rendered.Config{Fleet: f, Engine: &render.Engine{}})
	if err != nil {
		t.Fatal(err)
	}
	ahead := registrytest.Pushed(t, reg, "web", set.Results[0].Objects...)
	if err := reg.Tag(ctx, "web", "e1", ahead); err != nil {
		t.Fatal(err)
	}
	outcomes := (&Engine{Connector: clusters{}}).Run(ctx, set, Options{Parallel: 1, Concurrency: 1}, func(Event) {})
	if got := byCluster(outcomes); got["e1"] != "succeeded in edge" {
		t.Fatalf("outcomes %v", got)
	}
	if tagOf(t, reg, "e1") != ahead {
		t.Fatalf("e1's tag at %s, want the release's artifact %s", tagOf(t, reg, "e1"), ahead)
	}
	if claims := signedClaims(t, reg, ahead); len(claims) != 1 || claims[0].Cluster != "e1" || claims[0].Revision != 1 {
		t.Fatalf("the artifact a tag was moved to ahead of the gates is signed for %+v, want e1's revision 1", claims)
	}
}
