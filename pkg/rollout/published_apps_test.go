package rollout

import (
	"context"
	"maps"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/internal/registrytest"
	"github.com/kubectl-fleet/kubectl-fleet/internal/testfiles"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/digest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/pause"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/target/registry"
)

// A delivered cluster's app whose dependency is outside the run starts
// only once the dependency was published to that cluster: the same
// rule as on a cluster written to, asked of the registry.
func TestPublishedDependencyOutsideTheRun(t *testing.T) {
	d, reg := registrytest.Delivery(t)
	p := &registryTarget{e: &Engine{r: &rendered.Set{Fleet: &fleet.Fleet{}}}, run: &clusterRun{cluster: &fleet.Cluster{Name: "edge-1"}}, d: d}
	ctx := context.Background()

	err := p.dependencyApplied(ctx, "db")
	if err == nil || !strings.Contains(err.Error(), "dependency db was never published to this cluster") {
		t.Fatalf("a dependency never published: got %v", err)
	}

	dg := registrytest.Pushed(t, reg, "db", &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "db", "namespace": "web"}}})
	if err := reg.Tag(ctx, "db", "edge-2", dg); err != nil {
		t.Fatal(err)
	}
	if err := p.dependencyApplied(ctx, "db"); err == nil {
		t.Fatal("db was published to edge-2 only, yet it counts on edge-1")
	}
	if err := reg.Tag(ctx, "db", "edge-1", dg); err != nil {
		t.Fatal(err)
	}
	if err := p.dependencyApplied(ctx, "db"); err != nil {
		t.Fatalf("db is published to edge-1, and no context reads it: %v", err)
	}
}

// A delivered cluster whose render is its current revision's, from the
// same commit, costs no pack, no push, no write: its artifact is that
// revision's, read from its history, and its render, let go, is not
// made again. A changed render is packed, pushed and recorded as ever,
// with the digest of its objects.
func TestPublishedUnchanged(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []string // METHOD path, of this run
	)
	d, reg := registrytest.DeliveryWith(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, r.Method+" "+r.URL.Path)
			mu.Unlock()
			h.ServeHTTP(w, r)
		})
	})
	dir := t.TempDir()
	write := func(v string) {
		testfiles.Write(t, dir, map[string]string{
			"fleet.yaml":  "apiVersion: fleet/v1alpha1\nkind: Fleet\nmetadata: {name: shop}\ngroups:\n- name: edge\n  delivery: {oci: \"" + d.OCI + "\", insecure: true}\nclusters:\n- {name: e1, group: edge}\n- {name: e2, group: edge}\n- {name: e3, group: edge}\napps:\n- {name: web, manifests: web}\n",
			"web/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, namespace: default}\ndata: {v: \"" + v + "\", c: \"${FLEET_CLUSTER_NAME}\"}\n",
		})
	}
	write("1")
	f, err := fleet.Load(filepath.Join(dir, "fleet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	apply := func() map[string]string {
		t.Helper()
		mu.Lock()
		seen = nil
		mu.Unlock()
		publish.ForgetConnections() // as a new process
		e, o := &Engine{Connector: clusters{}}, Options{Parallel: 1, Concurrency: 1}
		set, err := e.Prepare(ctx, rendered.Config{Fleet: f, Engine: &render.Engine{}}, &o, true)
		if err != nil {
			t.Fatal(err)
		}
		return byCluster(e.Run(ctx, set, o, func(Event) {}))
	}
	requests := func(match func(string) bool) (n int) {
		mu.Lock()
		defer mu.Unlock()
		for _, s := range seen {
			if match(s) {
				n++
			}
		}
		return n
	}
	writes := func(s string) bool { return !strings.HasPrefix(s, "GET ") && !strings.HasPrefix(s, "HEAD ") }
	byDigest := func(s string) bool { return strings.Contains(s, "/manifests/sha256:") }
	all := func(string) bool { return true }
	revisionOf := func(cluster string) revision.Revision {
		h, err := reg.History(ctx, "web", cluster)
		if err != nil {
			t.Fatal(err)
		}
		rev, _ := h.Record()
		return rev
	}
	succeeded := map[string]string{"e1": "succeeded in edge", "e2": "succeeded in edge", "e3": "succeeded in edge"}

	if got := apply(); !maps.Equal(got, succeeded) {
		t.Fatalf("first release: %v", got)
	}
	// Each history written once, its verdict with its revision; each tag
	// moved without reading back the artifact this run pushed.
	if n := requests(func(s string) bool { return strings.HasPrefix(s, "PUT ") && strings.HasSuffix(s, ".history") }); n != 3 {
		t.Errorf("%d histories written for 3 clusters, want 3: %v", n, seen)
	}
	if n := requests(func(s string) bool { return strings.HasPrefix(s, "GET ") && byDigest(s) }); n != 0 {
		t.Errorf("%d artifacts read back to tag them: %v", n, seen)
	}
	first := revisionOf("e3")
	if first.Verification.State != revision.Unverified || !strings.HasPrefix(first.Verification.Reason, NotObserved) {
		t.Errorf("e3's verdict: %+v", first.Verification)
	}
	if got := apply(); !maps.Equal(got, succeeded) {
		t.Fatalf("again: %v", got)
	}
	// e1 starts at once and is kept whole: its artifact is packed and
	// looked for; e2 and e3, let go, are neither.
	if n := requests(writes); n != 0 {
		t.Errorf("an unchanged fleet wrote %d times to the registry: %v", n, seen)
	}
	if n := requests(byDigest); n != 1 {
		t.Errorf("%d artifacts looked for by digest, want 1 (e1's): %v", n, seen)
	}
	if n, most := requests(all), 3*2+1+1+3; n > most { // tag, history; the pauses listed; e1's look; pings
		t.Errorf("%d requests for 3 unchanged clusters, want at most %d: %v", n, most, seen)
	}
	if again := revisionOf("e3"); again.Number != first.Number || again.Artifact != first.Artifact {
		t.Errorf("e3's revision moved: %+v, was %+v", again, first)
	}

	if n := requests(func(s string) bool { return strings.HasSuffix(s, ".pause") }); n != 0 {
		t.Errorf("%d pause records read, and there are none: %v", n, seen)
	}
	// A cluster with a pause record: listed, read, held.
	if outcomes, _ := (pause.Change{Fleet: f, Clusters: []*fleet.Cluster{&f.Clusters[1]}, Reason: "INC-2", Now: time.Now()}).Apply(ctx, nil, registry.Of(f)); len(outcomes) != 1 || outcomes[0].Err != nil {
		t.Fatalf("pause: %+v", outcomes)
	}
	if got := apply(); got["e2"] != "skipped in edge" || got["e1"] != "succeeded in edge" {
		t.Fatalf("e2 paused: %v", got)
	}
	if outcomes, _ := (pause.Change{Fleet: f, Clusters: []*fleet.Cluster{&f.Clusters[1]}, Lift: true, Now: time.Now()}).Apply(ctx, nil, registry.Of(f)); len(outcomes) != 1 || outcomes[0].Err != nil {
		t.Fatalf("resume: %+v", outcomes)
	}

	write("2")
	if got := apply(); !maps.Equal(got, succeeded) {
		t.Fatalf("second release: %v", got)
	}
	set, err := rendered.Render(ctx, rendered.Config{Fleet: f, Engine: &render.Engine{}})
	if err != nil {
		t.Fatal(err)
	}
	second := revisionOf("e3")
	if want := digest.Render(set.Of("e3")[0].Objects, nil); second.Number != first.Number+1 || second.Digest != want || second.Objects != 1 || second.Artifact == first.Artifact {
		t.Errorf("e3's second release: %+v, want revision %d of digest %s", second, first.Number+1, want)
	}
	if tag, _, _ := reg.Resolve(ctx, "web", "e3"); tag.String() != second.Artifact {
		t.Errorf("e3's tag at %s, its revision's artifact %s", tag, second.Artifact)
	}
}
