package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// managers lists the field managers of an object, one per line.
func managers(t *testing.T, context string, args ...string) string {
	t.Helper()
	out, _ := get(t, context, append(args, "-o", "jsonpath={range .metadata.managedFields[*]}{.manager}{\"\\n\"}{end}")...)
	return out
}

// TestAdoptionIsReleasedNotDeleted: a Namespace that existed before the
// app, with someone's ConfigMap in it, is said "adopt" by diff and
// "adopted" by apply. An --atomic apply of the new app that fails removes
// what the app created and releases the Namespace (our label and field
// manager gone), which keeps the ConfigMap; so does delete after a
// successful apply. fleet.kubectl.io/prune: always on the live object is
// the explicit way to delete it anyway.
func TestAdoptionIsReleasedNotDeleted(t *testing.T) {
	const ns = "e2e-adopt"
	if _, errOut, code := kubectl(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: "+ns+"}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: theirs, namespace: "+ns+"}\ndata: {k: v}\n", "apply", "--context", "fleet-c1", "--server-side", "--field-manager", "platform-team", "-f", "-"); code != 0 {
		t.Fatal(errOut)
	}
	own := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: own, namespace: " + ns + "}\n"
	broken := "---\napiVersion: v1\nkind: Service\nmetadata: {name: broken, namespace: " + ns + "}\nspec:\n  ports: [{port: 0}]\n"
	dir := workdir(t, stgOnly, map[string]string{"bad/all.yaml": namespaced(ns, own+broken), "good/all.yaml": namespaced(ns, own)})
	stillThere := func(when string) {
		t.Helper()
		if phase, _ := get(t, "fleet-c1", "namespace", ns, "-o", "jsonpath={.status.phase}"); phase != "Active" {
			t.Fatalf("%s: namespace %s is %q", when, ns, phase)
		}
		if v, _ := get(t, "fleet-c1", "configmap", "theirs", "-n", ns, "-o", "jsonpath={.data.k}"); v != "v" {
			t.Fatalf("%s: the platform team's ConfigMap is gone", when)
		}
		if l, _ := get(t, "fleet-c1", "namespace", ns, "-o", "jsonpath={.metadata.labels.applyset\\.kubernetes\\.io/part-of}"); l != "" {
			t.Errorf("%s: the released namespace is still labelled %q", when, l)
		}
		if m := managers(t, "fleet-c1", "namespace", ns); strings.Contains(m, "kubectl-fleet") {
			t.Errorf("%s: the released namespace still has our field manager:\n%s", when, m)
		}
	}

	out, errOut, code := fleet(t, dir, "diff", "-f", filepath.Join(dir, "good"), "--name", "adopt")
	if code != 1 || !strings.Contains(out, "namespace/"+ns+": adopt: it exists and kubectl fleet did not create it") {
		t.Fatalf("diff: exit %d\n%s%s", code, out, errOut)
	}

	out, errOut, code = fleet(t, dir, "apply", "-f", filepath.Join(dir, "bad"), "--name", "adopt", "--atomic")
	if code != 1 || !strings.Contains(out, "namespace/"+ns+" adopted") || !strings.Contains(out, "rolled back: adopt removed") {
		t.Fatalf("apply --atomic: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "namespace/"+ns+" kept: adopted: it existed before app adopt applied it; released, not deleted") {
		t.Errorf("the rollback does not say it released the namespace:\n%s", out)
	}
	if !absent(t, "fleet-c1", "configmap", "own", "-n", ns) {
		t.Error("the ConfigMap the failed apply created survived its rollback")
	}
	stillThere("after the atomic rollback")

	out, errOut, code = fleet(t, dir, "apply", "-f", filepath.Join(dir, "good"), "--name", "adopt")
	if code != 0 || !strings.Contains(out, "namespace/"+ns+" adopted") || !strings.Contains(out, "configmap/own created") {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = fleet(t, dir, "delete", "-f", filepath.Join(dir, "good"), "--name", "adopt", "--yes")
	if code != 0 || !strings.Contains(out, "namespace/"+ns+" kept: adopted") || !strings.Contains(out, "configmap/own deleted") {
		t.Fatalf("delete: exit %d\n%s%s", code, out, errOut)
	}
	stillThere("after delete")

	// Asked explicitly, on the live object: the adopted Namespace goes.
	if out, errOut, code := fleet(t, dir, "apply", "-f", filepath.Join(dir, "good"), "--name", "adopt"); code != 0 {
		t.Fatalf("apply again: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := kubectl(t, "", "annotate", "--context", "fleet-c1", "namespace", ns, "fleet.kubectl.io/prune=always"); code != 0 {
		t.Fatal(errOut)
	}
	out, errOut, code = fleet(t, dir, "delete", "-f", filepath.Join(dir, "good"), "--name", "adopt", "--yes")
	if code != 0 || !strings.Contains(out, "namespace/"+ns+" deleted") {
		t.Fatalf("delete with prune: always: exit %d\n%s%s", code, out, errOut)
	}
}

// TestCRDWithOthersResourcesIsKept: an app that stops rendering its CRD
// and its custom resource prunes the resource, but not the CRD while a
// custom resource someone else made remains; it says so.
func TestCRDWithOthersResourcesIsKept(t *testing.T) {
	crd := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.e2e.fleet.io}
spec:
  group: e2e.fleet.io
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`
	ours := "---\napiVersion: e2e.fleet.io/v1\nkind: Gadget\nmetadata: {name: ours, namespace: e2e-gadgets}\n"
	dir := workdir(t, stgOnly+"apps:\n  - {name: gadgets, manifests: app.yaml}\n", map[string]string{"app.yaml": namespaced("e2e-gadgets", crd+ours)})
	if out, errOut, code := fleet(t, dir, "apply"); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := kubectl(t, "apiVersion: e2e.fleet.io/v1\nkind: Gadget\nmetadata: {name: theirs, namespace: default}\n", "apply", "--context", "fleet-c1", "-f", "-"); code != 0 {
		t.Fatal(errOut)
	}
	if err := writeFile(dir, "app.yaml", namespaced("e2e-gadgets", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: left, namespace: e2e-gadgets}\n")); err != nil {
		t.Fatal(err)
	}
	// diff says what apply --prune will do: the same rule, the same guard.
	out, errOut, code := fleet(t, dir, "diff")
	if code != 1 || !strings.Contains(out, "customresourcedefinition.apiextensions.k8s.io/gadgets.e2e.fleet.io: no longer rendered; kept: not deleted: 1 custom resource remains in 1 namespace") {
		t.Fatalf("diff: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = fleet(t, dir, "apply", "--prune")
	if code != 0 || !strings.Contains(out, "gadget.e2e.fleet.io/ours pruned") ||
		!strings.Contains(out, "customresourcedefinition.apiextensions.k8s.io/gadgets.e2e.fleet.io kept: not deleted: 1 custom resource remains in 1 namespace") {
		t.Fatalf("apply --prune: exit %d\n%s%s", code, out, errOut)
	}
	if v, code := get(t, "fleet-c1", "gadgets.e2e.fleet.io", "theirs", "-n", "default", "-o", "name"); code != 0 || v == "" {
		t.Error("someone else's custom resource went with the CRD")
	}
}

// TestSecretDigestsAreKeyed: the digests the ApplySet parent keeps (a
// ConfigMap anyone with view reads) hash a Secret's values under a key of
// the cluster's own: the same Secret applied to two clusters has two
// digests there, the same ConfigMap one, and the key is a Secret in
// kubectl-fleet.
func TestSecretDigestsAreKeyed(t *testing.T) {
	app := namespaced("e2e-keyed", "apiVersion: v1\nkind: Secret\nmetadata: {name: db, namespace: e2e-keyed}\nstringData: {password: hunter2}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: e2e-keyed}\ndata: {a: \"1\"}\n")
	dir := workdir(t, twoGroups+"apps:\n  - {name: keyed, manifests: app.yaml}\n", map[string]string{"app.yaml": app})
	if out, errOut, code := fleet(t, dir, "apply", "--yes", "-c", "stg", "-c", "prod-a"); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	recorded := func(context string) map[string]string {
		t.Helper()
		out, _ := get(t, context, "configmap", "fleet-keyed", "-n", "kubectl-fleet", "-o", "jsonpath={.data.applied}")
		m := map[string]string{}
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) == 4 {
				m[f[0]] = f[1]
			}
		}
		return m
	}
	c1, c2 := recorded("fleet-c1"), recorded("fleet-c2")
	const s, cm = "Secret/e2e-keyed/db", "ConfigMap/e2e-keyed/settings"
	if c1[s] == "" || c1[cm] == "" {
		t.Fatalf("the parent records no digests: %v", c1)
	}
	if c1[s] == c2[s] {
		t.Errorf("the Secret has the same digest on two clusters (%s): not keyed", c1[s])
	}
	if c1[cm] != c2[cm] {
		t.Errorf("the ConfigMap's digest differs between clusters: %s, %s", c1[cm], c2[cm])
	}
	if v, code := get(t, "fleet-c1", "secret", "fleet-digest-key", "-n", "kubectl-fleet", "-o", "jsonpath={.data.key}"); code != 0 || len(v) < 40 {
		t.Errorf("no digest key on fleet-c1: %q", v)
	}
	// And the next apply still skips both: the key is the same.
	if out, errOut, code := fleet(t, dir, "apply", "--yes", "-c", "stg", "-o", "json"); code != 0 || strings.Count(out, `"action":"unchanged"`) != 3 {
		t.Errorf("re-apply: exit %d\n%s%s", code, out, errOut)
	}
}

// TestStopSignalsRemoveKubeconfigs: the kubeconfig a check gets (this
// cluster's only) is removed when the run is stopped by SIGHUP (the
// terminal closed) or SIGTERM (a CI runner cancelling), as by Ctrl-C, and
// also when a second signal ends the process without waiting.
func TestStopSignalsRemoveKubeconfigs(t *testing.T) {
	seen := t.TempDir()
	check := "#!/bin/sh\necho \"$KUBECONFIG\" > \"$1/path.tmp\" && mv \"$1/path.tmp\" \"$1/path\"\nsleep 60\n"
	fleetYAML := strings.Replace(stgOnly, "  - {name: staging}\n", "  - name: staging\n    verify:\n      - {name: slow, command: [./slow.sh, "+seen+"], timeout: 2m}\n", 1) +
		"apps:\n  - {name: signals, manifests: app.yaml}\n"
	dir := workdir(t, fleetYAML, map[string]string{"app.yaml": namespaced("e2e-signals", ""), "slow.sh": check})
	if err := os.Chmod(filepath.Join(dir, "slow.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		signals []syscall.Signal
	}{
		{"SIGHUP", []syscall.Signal{syscall.SIGHUP}},
		{"SIGTERM twice", []syscall.Signal{syscall.SIGTERM, syscall.SIGTERM}},
	} {
		_ = os.Remove(filepath.Join(seen, "path"))
		r := startFleet(t, dir, nil, "apply")
		deadline := time.Now().Add(60 * time.Second)
		var path []byte
		for time.Now().Before(deadline) {
			if b, err := os.ReadFile(filepath.Join(seen, "path")); err == nil {
				path = b
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		kubeconfig := strings.TrimSpace(string(path))
		if kubeconfig == "" {
			out, errOut := r.output()
			t.Fatalf("%s: the check never ran\n%s%s", tt.name, out, errOut)
		}
		if _, err := os.Stat(kubeconfig); err != nil {
			t.Fatalf("%s: the check's kubeconfig is not there while it runs: %v", tt.name, err)
		}
		for _, sig := range tt.signals {
			if err := r.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if !r.exited(30 * time.Second) {
			t.Fatalf("%s: still running", tt.name)
		}
		if r.code != 130 { // ExitInterrupted
			out, errOut := r.output()
			t.Errorf("%s: exit %d\n%s%s", tt.name, r.code, out, errOut)
		}
		if _, err := os.Stat(kubeconfig); !os.IsNotExist(err) {
			t.Errorf("%s: the check's kubeconfig %s is left behind (%v)", tt.name, kubeconfig, err)
		}
		if _, err := os.Stat(filepath.Dir(kubeconfig)); !os.IsNotExist(err) {
			t.Errorf("%s: the folder of temporary kubeconfigs is left behind", tt.name)
		}
	}
}

// TestNamespaceWithOthersObjectsIsKept: deleting an app leaves the
// Namespace it created while someone else's ConfigMap is in it, says so,
// and releases it.
func TestNamespaceWithOthersObjectsIsKept(t *testing.T) {
	dir := workdir(t, stgOnly+"apps:\n  - {name: nsguard, manifests: app.yaml}\n", map[string]string{"app.yaml": namespaced("e2e-nsguard", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ours, namespace: e2e-nsguard}\n")})
	if out, errOut, code := fleet(t, dir, "apply"); code != 0 || !strings.Contains(out, "namespace/e2e-nsguard created") {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := kubectl(t, "", "create", "configmap", "theirs", "-n", "e2e-nsguard", "--context", "fleet-c1"); code != 0 {
		t.Fatal(errOut)
	}
	// diff of a render without the Namespace says what apply --prune
	// will do with it: kept, with the same reason as delete's.
	moved := workdir(t, stgOnly+"apps:\n  - {name: nsguard, manifests: app.yaml}\n", map[string]string{"app.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ours, namespace: default}\n"})
	out, errOut, code := fleet(t, moved, "diff")
	if code != 1 || !strings.Contains(out, "namespace/e2e-nsguard: no longer rendered; kept: not deleted: 1 object that is not the app's remains: configmaps/theirs") {
		t.Fatalf("diff: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = fleet(t, dir, "delete", "--yes")
	if code != 0 || !strings.Contains(out, "namespace/e2e-nsguard kept: not deleted: 1 object that is not the app's remains: configmaps/theirs") || !strings.Contains(out, "configmap/ours deleted") {
		t.Fatalf("delete: exit %d\n%s%s", code, out, errOut)
	}
	if _, code := get(t, "fleet-c1", "configmap", "theirs", "-n", "e2e-nsguard"); code != 0 {
		t.Error("someone else's ConfigMap went with the app")
	}
	if l, _ := get(t, "fleet-c1", "namespace", "e2e-nsguard", "-o", "jsonpath={.metadata.labels.applyset\\.kubernetes\\.io/part-of}"); l != "" {
		t.Errorf("the kept namespace is still labelled %q", l)
	}
}

// TestAnotherFleetsAppIsNotOurs: two fleets, each with an app "web" on one
// cluster. Team B's history does not list team A's revisions (named, it
// is refused, saying whose the app is), and team B's rollback of it is
// refused with nothing changed.
func TestAnotherFleetsAppIsNotOurs(t *testing.T) {
	const ns, app = "e2e-two-fleets", "e2e-two-fleets-web"
	fleetOf := func(team string) string {
		return strings.Replace(stgOnly, "metadata: {name: e2e}", "metadata: {name: "+team+"}", 1) + "apps:\n  - {name: " + app + ", manifests: app.yaml}\n"
	}
	cm := func(v string) string {
		return namespaced(ns, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: "+ns+"}\ndata: {v: "+v+"}\n")
	}
	a := workdir(t, fleetOf("team-a"), map[string]string{"app.yaml": cm("one")})
	t.Cleanup(func() { _, _, _ = fleet(t, a, "delete", "--yes") })
	for _, v := range []string{"one", "two"} {
		must(t, os.WriteFile(filepath.Join(a, "app.yaml"), []byte(cm(v)), 0o644))
		if out, errOut, code := fleet(t, a, "apply"); code != 0 {
			t.Fatalf("team A's apply of %s: exit %d\n%s%s", v, code, out, errOut)
		}
	}
	if out, _, code := fleet(t, a, "history"); code != 0 || strings.Count(out, app) != 2 {
		t.Errorf("team A's history: exit %d\n%s", code, out)
	}
	b := workdir(t, fleetOf("team-b"), map[string]string{"app.yaml": cm("theirs")})
	if out, errOut, code := fleet(t, b, "history"); code != 0 || strings.Contains(out, app) {
		t.Errorf("team B's history lists team A's revisions: exit %d\n%s%s", code, out, errOut)
	}
	const whose = "app " + app + " on this cluster is fleet team-a's"
	if out, errOut, code := fleet(t, b, "history", "--app", app); code != 1 || !strings.Contains(errOut, whose) {
		t.Errorf("team B's history of the app: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := fleet(t, b, "rollback", "--app", app, "--yes"); code != 1 || !strings.Contains(out+errOut, whose) {
		t.Errorf("team B's rollback: exit %d\n%s%s", code, out, errOut)
	}
	if v, _ := get(t, "fleet-c1", "configmap", "settings", "-n", ns, "-o", "jsonpath={.data.v}"); v != "two" {
		t.Errorf("team A's ConfigMap holds %q after team B's rollback, want two", v)
	}
}
