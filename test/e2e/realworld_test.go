package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// stgOnly is a fleet of the full cluster alone, with apps added by tests.
const stgOnly = `apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: e2e}
groups:
  - {name: staging}
clusters:
  - {name: stg, group: staging, context: fleet-c1}
`

// An add-on's cluster-scoped custom resource, whose CRD another app
// installs, rendered by an app with a namespace: the render can only guess
// that the kind is namespaced and gives it the app's namespace. The cluster
// knows better: apply --prune must keep what it applied, and diff and
// status must see no difference.
func TestClusterScopedKindFromAnotherApp(t *testing.T) {
	dir := workdir(t, stgOnly+`apps:
  - {name: scope-crds, manifests: crds}
  - {name: scope-app, manifests: app, namespace: e2e-scope}
`, map[string]string{
		"crds/crd.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: clusterpolicies.e2e.example.com}
spec:
  group: e2e.example.com
  names: {kind: ClusterPolicy, plural: clusterpolicies, singular: clusterpolicy}
  scope: Cluster
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec: {type: object, properties: {level: {type: string}}}
`,
		"app/all.yaml": `apiVersion: v1
kind: Namespace
metadata: {name: e2e-scope}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {a: "1"}
---
apiVersion: e2e.example.com/v1
kind: ClusterPolicy
metadata: {name: e2e-scope-strict}
spec: {level: strict}
---
# Charts often give every object a namespace.
apiVersion: e2e.example.com/v1
kind: ClusterPolicy
metadata: {name: e2e-scope-lax, namespace: e2e-scope-elsewhere}
spec: {level: lax}
`,
	})
	if out, errOut, code := fleet(t, dir, "apply", "--app", "scope-crds"); code != 0 {
		t.Fatalf("apply crds: exit %d\n%s%s", code, out, errOut)
	}
	// The render guesses: the offline view gives the policy a namespace.
	if out, _, _ := fleet(t, dir, "render", "--app", "scope-app"); !strings.Contains(out, "name: e2e-scope-strict\n  namespace: e2e-scope") {
		t.Errorf("render no longer guesses a namespace for an unknown kind; update this test:\n%s", out)
	}
	for i := range 2 {
		out, errOut, code := fleet(t, dir, "apply", "--app", "scope-app", "--prune")
		if code != 0 || strings.Contains(out, "pruned") {
			t.Fatalf("apply %d: exit %d\n%s%s", i+1, code, out, errOut)
		}
		if i == 0 && !strings.Contains(out, "clusterpolicy.e2e.example.com/e2e-scope-strict created") {
			t.Errorf("apply 1 did not create the policy:\n%s", out)
		}
		if v, _ := get(t, "fleet-c1", "clusterpolicies", "e2e-scope-strict", "e2e-scope-lax", "-o", "jsonpath={.items[*].spec.level}"); v != "strict lax" {
			t.Fatalf("after apply %d the policies are %q, want both kept", i+1, v)
		}
	}
	out, errOut, code := fleet(t, dir, "diff", "--app", "scope-app")
	if code != 0 || !strings.Contains(out, "0 to create, 0 to change, 0 to prune, 4 unchanged") {
		t.Errorf("diff after apply: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = fleet(t, dir, "status", "--app", "scope-app")
	if code != 0 || strings.Contains(out, "Orphan") || strings.Contains(strings.ToLower(out), "drift") {
		t.Errorf("status after apply: exit %d\n%s%s", code, out, errOut)
	}
	// The set records the namespace it uses, not those the render gave the
	// cluster-scoped objects.
	ann, _ := get(t, "fleet-c1", "configmap", "fleet-scope-app", "-n", "kubectl-fleet", "-o", `jsonpath={.metadata.annotations.applyset\.kubernetes\.io/additional-namespaces}`)
	if ann != "e2e-scope" {
		t.Errorf("recorded namespaces %q", ann)
	}
	// Dropping the policies from the app prunes them, cluster-scoped as
	// they are.
	if err := writeFile(dir, "app/all.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: e2e-scope}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: \"1\"}\n"); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = fleet(t, dir, "apply", "--app", "scope-app", "--prune")
	if code != 0 || !strings.Contains(out, "clusterpolicy.e2e.example.com/e2e-scope-strict pruned") || !strings.Contains(out, "2 unchanged, 2 pruned") {
		t.Errorf("prune of the dropped policy: exit %d\n%s%s", code, out, errOut)
	}
	if !absent(t, "fleet-c1", "clusterpolicies", "e2e-scope-strict") {
		t.Error("the dropped policy is still there")
	}
}

// writeFile replaces a file of a work folder.
func writeFile(dir, name, content string) error {
	return os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)
}

// Per-object policies: a PVC that must outlive the app, a Secret created
// once and then owned by whoever rotates it.
func TestObjectPolicies(t *testing.T) {
	const ns = "e2e-policy"
	objs := func(withPVC bool, token string) string {
		s := `apiVersion: v1
kind: Namespace
metadata: {name: e2e-policy}
---
apiVersion: v1
kind: Secret
metadata:
  name: token
  namespace: e2e-policy
  annotations: {fleet.kubectl.io/apply: create-only}
stringData: {token: ` + token + `}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: e2e-policy}
data: {a: "1"}
`
		if withPVC {
			s += `---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
  namespace: e2e-policy
  annotations: {fleet.kubectl.io/prune: disabled}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
`
		}
		return s
	}
	dir := workdir(t, stgOnly+"apps:\n  - {name: policy, manifests: app}\n", map[string]string{"app/all.yaml": objs(true, "first-value-e2e")})
	if out, errOut, code := fleet(t, dir, "apply"); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	// create-only: a changed render does not update the live Secret.
	if err := writeFile(dir, "app/all.yaml", objs(true, "second-value-e2e")); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := fleet(t, dir, "diff")
	if code != 0 || strings.Contains(out+errOut, "value-e2e") {
		t.Errorf("diff of a create-only object: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = fleet(t, dir, "apply")
	if code != 0 || !strings.Contains(out, "secret/token unchanged: exists, not updated (fleet.kubectl.io/apply: create-only)") {
		t.Errorf("apply of a create-only object: exit %d\n%s%s", code, out, errOut)
	}
	if v, _ := get(t, "fleet-c1", "secret", "token", "-n", ns, "-o", "jsonpath={.data.token}"); v != "Zmlyc3QtdmFsdWUtZTJl" {
		t.Errorf("the create-only Secret was updated: %q", v)
	}
	// prune: disabled: dropped from the render, the PVC stays, leaves the
	// app, and delete leaves it too.
	if err := writeFile(dir, "app/all.yaml", objs(false, "second-value-e2e")); err != nil {
		t.Fatal(err)
	}
	out, _, code = fleet(t, dir, "diff")
	if code != 0 || !strings.Contains(out, "persistentvolumeclaim/data: no longer rendered; kept: fleet.kubectl.io/prune: disabled; left in place and no longer part of app policy") || !strings.Contains(out, "0 to prune") {
		t.Errorf("diff of a kept object: exit %d\n%s", code, out)
	}
	out, errOut, code = fleet(t, dir, "apply", "--prune")
	if code != 0 || !strings.Contains(out, "persistentvolumeclaim/data kept: fleet.kubectl.io/prune: disabled; left in place and no longer part of app policy") {
		t.Fatalf("apply --prune: exit %d\n%s%s", code, out, errOut)
	}
	if _, code := get(t, "fleet-c1", "pvc", "data", "-n", ns); code != 0 {
		t.Fatal("the PVC was pruned")
	}
	if out, _, code := fleet(t, dir, "diff"); code != 0 || strings.Contains(out, "persistentvolumeclaim") || !strings.Contains(out, "0 to prune") {
		t.Errorf("the kept PVC is still reported: exit %d\n%s", code, out)
	}
	// Rendered again, it is the app's again; delete keeps it.
	if err := writeFile(dir, "app/all.yaml", objs(true, "second-value-e2e")); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := fleet(t, dir, "apply"); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = fleet(t, dir, "delete", "--yes")
	if code != 0 || !strings.Contains(out, "policy: persistentvolumeclaim/data kept") || !strings.Contains(out, "policy: configmap/settings deleted") {
		t.Fatalf("delete: exit %d\n%s%s", code, out, errOut)
	}
	if _, code := get(t, "fleet-c1", "pvc", "data", "-n", ns); code != 0 {
		t.Error("delete removed the PVC")
	}
}

// A Job's template cannot change: the error says which field and how to
// proceed; fleet.kubectl.io/force: enabled replaces the Job.
func TestImmutableField(t *testing.T) {
	job := func(image, force string) string {
		return namespaced("e2e-immutable", `apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  namespace: e2e-immutable
  annotations: {fleet.kubectl.io/force: `+force+`}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: m, image: `+image+`, env: [{name: PASSWORD, value: do-not-print-me}]}]
`)
	}
	dir := workdir(t, stgOnly+"apps:\n  - {name: immutable, manifests: app}\n", map[string]string{"app/all.yaml": job("busybox:1", "disabled")})
	if out, errOut, code := fleet(t, dir, "apply"); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	uid, _ := get(t, "fleet-c1", "job", "migrate", "-n", "e2e-immutable", "-o", "jsonpath={.metadata.uid}")
	if err := writeFile(dir, "app/all.yaml", job("busybox:2", "disabled")); err != nil {
		t.Fatal(err)
	}
	want := "the server refuses the change to spec.template, which cannot change once set: delete job.batch/migrate and apply again, or annotate it fleet.kubectl.io/force: enabled"
	out, errOut, code := fleet(t, dir, "diff")
	if code != 2 || !strings.Contains(out+errOut, want) || strings.Contains(out+errOut, "do-not-print-me") {
		t.Errorf("diff: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = fleet(t, dir, "apply")
	if code != 1 || !strings.Contains(out, "job.batch/migrate failed: "+want) || strings.Contains(out+errOut, "do-not-print-me") {
		t.Errorf("apply: exit %d\n%s%s", code, out, errOut)
	}
	if err := writeFile(dir, "app/all.yaml", job("busybox:2", "enabled")); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = fleet(t, dir, "diff")
	if code != 1 || !strings.Contains(out, "job.batch/migrate: spec.template is immutable; would be deleted and created again") ||
		!strings.Contains(out, "-        image: busybox:1\n[stg] +        image: busybox:2\n") || strings.Contains(out, "imagePullPolicy") {
		t.Errorf("diff with force: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = fleet(t, dir, "apply")
	if code != 0 || !strings.Contains(out, "job.batch/migrate replaced: spec.template is immutable; deleted and created again") {
		t.Fatalf("apply with force: exit %d\n%s%s", code, out, errOut)
	}
	image, _ := get(t, "fleet-c1", "job", "migrate", "-n", "e2e-immutable", "-o", "jsonpath={.metadata.uid} {.spec.template.spec.containers[0].image}")
	if newUID, img, _ := strings.Cut(image, " "); newUID == uid || img != "busybox:2" {
		t.Errorf("after the replacement: uid %s (was %s), image %s", newUID, uid, img)
	}
	if out, _, code := fleet(t, dir, "diff"); code != 0 {
		t.Errorf("diff after the replacement: exit %d\n%s", code, out)
	}
}

// kubectl edit or patch on an applied object is a difference, not an
// error: diff shows what apply --force-conflicts would do and says so.
func TestHandEditIsADifference(t *testing.T) {
	dir := workdir(t, stgOnly+"apps:\n  - {name: handedit, manifests: app}\n", map[string]string{"app/all.yaml": namespaced("e2e-handedit", `apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: e2e-handedit}
data: {level: fleet, other: x}
`)})
	if out, errOut, code := fleet(t, dir, "apply"); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := kubectl(t, "", "patch", "--context", "fleet-c1", "-n", "e2e-handedit", "configmap", "settings", "-p", `{"data":{"level":"by-hand"}}`); code != 0 {
		t.Fatal(errOut)
	}
	out, errOut, code := fleet(t, dir, "diff")
	if code != 1 || !strings.Contains(out, `configmap/settings: conflicts with "kubectl-patch" (.data.level): apply needs --force-conflicts to take these fields back`) ||
		!strings.Contains(out, "[stg] -  level: by-hand\n[stg] +  level: fleet\n") || !strings.Contains(out, "(apply needs --force-conflicts for 1)") {
		t.Errorf("diff: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := fleet(t, dir, "status"); code != 1 || !strings.Contains(out, "2 of 2 Current, 1 drifted (r1 verified)") {
		t.Errorf("status: exit %d\n%s%s", code, out, errOut)
	}
	if out, _, code := fleet(t, dir, "apply"); code != 1 || !strings.Contains(out, `conflict with "kubectl-patch"`) {
		t.Errorf("apply without --force-conflicts: exit %d\n%s", code, out)
	}
	if out, errOut, code := fleet(t, dir, "apply", "--force-conflicts"); code != 0 {
		t.Fatalf("apply --force-conflicts: exit %d\n%s%s", code, out, errOut)
	}
	if out, _, code := fleet(t, dir, "diff"); code != 0 {
		t.Errorf("diff after apply --force-conflicts: exit %d\n%s", code, out)
	}
}

// An autoscaler (here kubectl scale) owns the replica count: with an ignore
// rule in the fleet file, diff and status do not report it and apply does
// not revert it, while the rest of the Deployment is still applied. Fields
// the render never sets (an annotation added by hand) are never drift.
func TestIgnoreDifferences(t *testing.T) {
	deploy := func(image string) string {
		return namespaced("e2e-ignore", `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: e2e-ignore}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: `+image+`}]}
`)
	}
	const rule = "ignoreDifferences:\n  - {group: apps, kind: Deployment, name: web, jsonPointers: [/spec/replicas]}\n"
	apps := "apps:\n  - {name: ignore, manifests: app}\n"
	dir := workdir(t, stgOnly+apps, map[string]string{"app/all.yaml": deploy("nginx:1")})
	if out, errOut, code := fleet(t, dir, "apply"); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	for _, args := range [][]string{
		{"scale", "deployment", "web", "--replicas", "5"},
		{"annotate", "deployment", "web", "team=shop"},
	} {
		if _, errOut, code := kubectl(t, "", append(args, "--context", "fleet-c1", "-n", "e2e-ignore")...); code != 0 {
			t.Fatal(errOut)
		}
	}
	// Without the rule the scale is a difference (and the annotation not).
	out, _, code := fleet(t, dir, "diff")
	if code != 1 || !strings.Contains(out, "-  replicas: 5\n[stg] +  replicas: 2") || strings.Contains(out, "team") {
		t.Errorf("diff without a rule: exit %d\n%s", code, out)
	}
	if err := writeFile(dir, "fleet.yaml", stgOnly+apps+rule); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := fleet(t, dir, "diff")
	if code != 0 || !strings.Contains(out, "0 to change") {
		t.Errorf("diff with the rule: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := fleet(t, dir, "status"); strings.Contains(out, "drifted") || strings.Contains(out, "Drifted") {
		t.Errorf("status with the rule: exit %d\n%s%s", code, out, errOut)
	}
	// The first apply takes a share of the field at its live value (the
	// object's managed fields change); from then on nothing changes.
	for i := range 2 {
		out, errOut, code = fleet(t, dir, "apply", "--prune")
		if code != 0 || i == 1 && !strings.Contains(out, "deployment.apps/web unchanged") {
			t.Errorf("apply %d with the rule: exit %d\n%s%s", i+1, code, out, errOut)
		}
		if got, _ := get(t, "fleet-c1", "deployment", "web", "-n", "e2e-ignore", "-o", "jsonpath={.spec.replicas}"); got != "5" {
			t.Fatalf("apply %d with the rule reverted the scale: replicas %s", i+1, got)
		}
	}
	// A new image is applied; the replica count stays the autoscaler's.
	if err := writeFile(dir, "app/all.yaml", deploy("nginx:2")); err != nil {
		t.Fatal(err)
	}
	out, _, code = fleet(t, dir, "diff")
	if code != 1 || !strings.Contains(out, "+      - image: nginx:2") || strings.Contains(out, "replicas") {
		t.Errorf("diff of a new image: exit %d\n%s", code, out)
	}
	if out, errOut, code := fleet(t, dir, "apply"); code != 0 || !strings.Contains(out, "deployment.apps/web configured") {
		t.Fatalf("apply of a new image: exit %d\n%s%s", code, out, errOut)
	}
	got, _ := get(t, "fleet-c1", "deployment", "web", "-n", "e2e-ignore", "-o", "jsonpath={.spec.replicas} {.spec.template.spec.containers[0].image} {.metadata.annotations.team}")
	if got != "5 nginx:2 shop" {
		t.Errorf("replicas, image, annotation: %q, want 5 nginx:2 shop", got)
	}
	// An --atomic apply that fails puts the image back, and leaves the
	// replica count the autoscaler's: the restore honours the rule too.
	broken := deploy("nginx:3") + "---\napiVersion: v1\nkind: Service\nmetadata: {name: broken, namespace: e2e-ignore}\nspec:\n  ports: [{port: 0}]\n"
	if err := writeFile(dir, "app/all.yaml", broken); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := fleet(t, dir, "apply", "--atomic"); code != 1 || !strings.Contains(out, "rolled back to r") {
		t.Fatalf("apply --atomic of a broken render: exit %d\n%s%s", code, out, errOut)
	}
	got, _ = get(t, "fleet-c1", "deployment", "web", "-n", "e2e-ignore", "-o", "jsonpath={.spec.replicas} {.spec.template.spec.containers[0].image}")
	if got != "5 nginx:2" {
		t.Errorf("after the atomic rollback: replicas and image %q, want 5 nginx:2", got)
	}
}

// Two apps render the same Namespace: each is told, neither takes it from
// the other, the one that drops it hands it to the other, and deleting the
// last one leaves it in place while another app has objects in it.
func TestSharedObject(t *testing.T) {
	ns := "apiVersion: v1\nkind: Namespace\nmetadata: {name: e2e-shared}\n---\n"
	cm := func(name string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ", namespace: e2e-shared}\n"
	}
	dir := workdir(t, stgOnly+`apps:
  - {name: shared-a, manifests: a}
  - {name: shared-b, manifests: b}
`, map[string]string{"a/all.yaml": ns + cm("a"), "b/all.yaml": ns + cm("b")})
	if out, errOut, code := fleet(t, dir, "apply", "--app", "shared-a"); code != 0 {
		t.Fatalf("apply a: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code := fleet(t, dir, "apply", "--app", "shared-b")
	if code != 0 || !strings.Contains(out, "namespace/e2e-shared unchanged; warning: shared with app shared-a, which applies it too (the last apply wins)") {
		t.Fatalf("apply b: exit %d\n%s%s", code, out, errOut)
	}
	// Neither app takes the Namespace from the other.
	for _, app := range []string{"shared-a", "shared-b"} {
		out, _, code = fleet(t, dir, "diff", "--app", app)
		if code != 0 || !strings.Contains(out, "namespace/e2e-shared: warning: shared with app shared-") {
			t.Errorf("diff %s: exit %d\n%s", app, code, out)
		}
	}
	// App a drops it: it goes to b, not away.
	if err := writeFile(dir, "a/all.yaml", cm("a")); err != nil {
		t.Fatal(err)
	}
	out, _, code = fleet(t, dir, "diff", "--app", "shared-a")
	if code != 0 || !strings.Contains(out, "namespace/e2e-shared: no longer rendered; kept: shared with app shared-b, which still applies it; left to it") {
		t.Errorf("diff a without the namespace: exit %d\n%s", code, out)
	}
	out, errOut, code = fleet(t, dir, "apply", "--app", "shared-a", "--prune")
	if code != 0 || !strings.Contains(out, "namespace/e2e-shared kept: shared with app shared-b, which still applies it; left to it") {
		t.Fatalf("apply --prune a: exit %d\n%s%s", code, out, errOut)
	}
	out, _, code = fleet(t, dir, "diff", "--app", "shared-b")
	if code != 0 || strings.Contains(out, "warning") {
		t.Errorf("diff b once it alone holds the namespace: exit %d\n%s", code, out)
	}
	// Deleting b leaves the Namespace, which holds a's ConfigMap.
	out, errOut, code = fleet(t, dir, "delete", "--app", "shared-b", "--yes")
	if code != 0 || !strings.Contains(out, "shared-b: namespace/e2e-shared kept: app shared-a has objects in it; left in place and no longer part of app shared-b") || !strings.Contains(out, "shared-b: configmap/b deleted") {
		t.Fatalf("delete b: exit %d\n%s%s", code, out, errOut)
	}
	if names, _ := get(t, "fleet-c1", "configmaps", "-n", "e2e-shared", "-o", "jsonpath={.items[*].metadata.name}"); names != "a kube-root-ca.crt" {
		t.Errorf("left in the shared namespace: %q", names)
	}
	if out, _, code = fleet(t, dir, "diff", "--app", "shared-a"); code != 0 || strings.Contains(out, "warning") {
		t.Errorf("diff a at the end: exit %d\n%s", code, out)
	}
}

// An app that drops its Namespace from the render but keeps objects in it
// does not prune the Namespace, which would take those objects along.
func TestPruneKeepsNamespaceInUse(t *testing.T) {
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: stays, namespace: e2e-inuse}\n"
	dir := workdir(t, stgOnly+"apps:\n  - {name: inuse, manifests: app.yaml}\n", map[string]string{"app.yaml": namespaced("e2e-inuse", cm)})
	if out, errOut, code := fleet(t, dir, "apply"); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	if err := writeFile(dir, "app.yaml", cm); err != nil {
		t.Fatal(err)
	}
	const kept = "namespace/e2e-inuse kept: objects app inuse still applies are in it; left in place and no longer part of app inuse"
	out, _, code := fleet(t, dir, "diff")
	if code != 0 || !strings.Contains(out, "namespace/e2e-inuse: no longer rendered; kept: objects app inuse still applies") {
		t.Errorf("diff: exit %d\n%s", code, out)
	}
	out, errOut, code := fleet(t, dir, "apply", "--prune")
	if code != 0 || !strings.Contains(out, kept) {
		t.Fatalf("apply --prune: exit %d\n%s%s", code, out, errOut)
	}
	if phase, _ := get(t, "fleet-c1", "namespace", "e2e-inuse", "-o", "jsonpath={.status.phase}"); phase != "Active" {
		t.Errorf("the namespace is %q", phase)
	}
	if _, code := get(t, "fleet-c1", "configmap", "stays", "-n", "e2e-inuse"); code != 0 {
		t.Error("the ConfigMap went with its namespace")
	}
}

// A status cell says the drift that a worse health would hide: on an API
// server without controllers a Deployment stays InProgress, and a
// hand-edited ConfigMap beside it is said too ("1 of 3 InProgress,
// 1 drifted"), so the cluster does not look like its untouched peers.
func TestStatusCellShowsDriftBehindProgress(t *testing.T) {
	fleetYAML := strings.Replace(stgOnly, "context: fleet-c1", "context: fleet-c2", 1) + "apps:\n  - {name: cell, manifests: app.yaml}\n"
	dir := workdir(t, fleetYAML, map[string]string{"app.yaml": namespaced("e2e-cell", `apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: e2e-cell}
data: {level: fleet}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: e2e-cell}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx:1}]}
`)})
	if out, errOut, code := fleet(t, dir, "apply"); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := kubectl(t, "", "patch", "--context", "fleet-c2", "-n", "e2e-cell", "configmap", "settings", "-p", `{"data":{"level":"by-hand"}}`); code != 0 {
		t.Fatal(errOut)
	}
	if out, errOut, code := fleet(t, dir, "status"); code != 1 || !strings.Contains(out, "1 of 3 InProgress, 1 drifted (r1") {
		t.Errorf("status: exit %d\n%s%s", code, out, errOut)
	}
}
