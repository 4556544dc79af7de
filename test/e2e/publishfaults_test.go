package e2e

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// TestPublishRegistryFaults is a registry that fails under a rollout:
// down before the first wave, nothing is applied anywhere and no tag
// moves; refusing one cluster's tag mid-wave, that cluster fails with
// the registry's answer and the others go on; once it answers again, a
// run converges without a second revision of the same artifact.
func TestPublishRegistryFaults(t *testing.T) {
	var down, refuseTag atomic.Bool
	r, host := loopbackRegistry(t, func(reg http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case down.Load():
				http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
				return
			case refuseTag.Load() && r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/manifests/rf-b"):
				http.Error(w, `{"errors":[{"code":"DENIED","message":"quota exceeded"}]}`, http.StatusForbidden)
				return
			}
			reg.ServeHTTP(w, r)
		})
	})
	const ns = "e2e-publish-faults"
	dir := workdir(t, `apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: e2e}
groups:
  - {name: staging}
  - {name: edge, maxFailures: 1, delivery: {oci: "oci://`+host+`/fleets/e2e", insecure: true}}
clusters:
  - {name: rf-stg, group: staging, context: fleet-c1}
  - {name: rf-a, group: edge}
  - {name: rf-b, group: edge}
apps:
  - {name: faults, manifests: app.yaml}
`, map[string]string{"app.yaml": namespaced(ns, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: "+ns+"}\ndata: {cluster: \"${FLEET_CLUSTER_NAME}\"}\n")})
	t.Cleanup(func() { _, _, _ = fleet(t, dir, "delete", "--yes", "-g", "staging") })
	tagOf := func(cluster string) string {
		t.Helper()
		d, found, err := r.Resolve(t.Context(), "faults", cluster)
		if err != nil {
			t.Fatal(err)
		}
		if !found {
			return ""
		}
		return d.String()
	}

	down.Store(true)
	out, errOut, code := fleet(t, dir, "apply", "--yes")
	if code != 1 || !strings.Contains(out+errOut, "publishing to oci://"+host+"/fleets/e2e") || !strings.Contains(out+errOut, "503") {
		t.Fatalf("apply with the registry down: exit %d\n%s%s", code, out, errOut)
	}
	if !absent(t, "fleet-c1", "namespace", ns) {
		t.Fatal("staging was written to although publishing failed before the first wave")
	}
	down.Store(false)
	if tagOf("rf-a") != "" || tagOf("rf-b") != "" {
		t.Fatal("a tag moved although publishing failed")
	}

	refuseTag.Store(true)
	out, errOut, code = fleet(t, dir, "apply", "--yes")
	if code != 1 || !said(out, "rf-b", "quota exceeded") || !said(out, "rf-a", "published oci://") || tagOf("rf-b") != "" || tagOf("rf-a") == "" {
		t.Fatalf("apply with rf-b's tag refused: exit %d, rf-b at %q\n%s%s", code, tagOf("rf-b"), out, errOut)
	}
	refuseTag.Store(false)
	out, errOut, code = fleet(t, dir, "apply", "--yes")
	if code != 0 || !said(out, "rf-b", "published oci://") || !said(out, "rf-b", "revision 1 is current") || tagOf("rf-b") == "" {
		t.Fatalf("apply once the registry answers: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := fleet(t, dir, "history", "-c", "rf-b", "-o", "json"); code != 0 || strings.Count(out, `"revision":`) != 1 {
		t.Fatalf("history of rf-b: exit %d, want one revision\n%s%s", code, out, errOut)
	}
}
