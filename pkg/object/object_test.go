package object

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestNormalize(t *testing.T) {
	in := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{
			"name": "web", "namespace": "ns", "uid": "u", "resourceVersion": "7", "generation": int64(2),
			"creationTimestamp": "2026-01-01T00:00:00Z", "managedFields": []any{map[string]any{"manager": "x"}},
			"annotations": map[string]any{"deployment.kubernetes.io/revision": "3", "team": "a"},
		},
		"spec":   map[string]any{"replicas": int64(2)},
		"status": map[string]any{"readyReplicas": int64(2)},
	}}
	want := map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "ns", "annotations": map[string]any{"team": "a"}},
		"spec":     map[string]any{"replicas": int64(2)},
	}
	if diff := cmp.Diff(want, Normalize(in).Object); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, ok := in.Object["status"]; !ok {
		t.Error("Normalize changed its input")
	}
	if Normalize(nil) != nil {
		t.Error("Normalize(nil) is not nil")
	}
}

func secret(data map[string]any, stringData map[string]any) *unstructured.Unstructured {
	o := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s"}}
	if data != nil {
		o["data"] = data
	}
	if stringData != nil {
		o["stringData"] = stringData
	}
	return &unstructured.Unstructured{Object: o}
}

func TestMask(t *testing.T) {
	live := secret(map[string]any{"same": "YQ==", "changed": "Yg==", "gone": "Yw=="}, nil)
	merged := secret(map[string]any{"same": "YQ==", "changed": "ZA==", "new": "ZQ=="}, nil)
	l, m, err := Mask(live, merged)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"same": "***", "changed": "*** (before)", "gone": "***"}, l.Object["data"]); diff != "" {
		t.Errorf("live (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"same": "***", "changed": "*** (after)", "new": "***"}, m.Object["data"]); diff != "" {
		t.Errorf("merged (-want +got):\n%s", diff)
	}
	if live.Object["data"].(map[string]any)["same"] != "YQ==" {
		t.Error("Mask changed its input")
	}
	// A new Secret, rendered with stringData, and a pruned one.
	_, m, _ = Mask(nil, secret(nil, map[string]any{"p": "plain"}))
	if m.Object["stringData"].(map[string]any)["p"] != "***" {
		t.Errorf("stringData not masked: %v", m.Object)
	}
	l, _, _ = Mask(secret(map[string]any{"k": "YQ=="}, nil), nil)
	if l.Object["data"].(map[string]any)["k"] != "***" {
		t.Errorf("pruned secret not masked: %v", l.Object)
	}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"k": "v"}}}
	if _, m, _ := Mask(nil, cm); m.Object["data"].(map[string]any)["k"] != "v" {
		t.Error("a ConfigMap was masked")
	}
}

func TestProject(t *testing.T) {
	live := &unstructured.Unstructured{Object: map[string]any{
		"kind": "Job",
		"spec": map[string]any{
			"backoffLimit": int64(6),
			"template": map[string]any{"spec": map[string]any{
				"restartPolicy": "Never", "dnsPolicy": "ClusterFirst",
				"containers": []any{
					map[string]any{"name": "m", "image": "busybox:1", "imagePullPolicy": "IfNotPresent"},
					map[string]any{"name": "sidecar", "image": "envoy"},
				},
			}},
		},
	}}
	shape := &unstructured.Unstructured{Object: map[string]any{
		"kind": "Job",
		"spec": map[string]any{
			"template": map[string]any{"spec": map[string]any{
				"restartPolicy": "Never",
				"containers":    []any{map[string]any{"name": "m", "image": "busybox:2"}},
				"volumes":       []any{map[string]any{"name": "v"}},
			}},
		},
	}}
	want := map[string]any{
		"kind": "Job",
		"spec": map[string]any{
			"template": map[string]any{"spec": map[string]any{
				"restartPolicy": "Never",
				// Item by item; a live item the shape lacks stays whole.
				"containers": []any{
					map[string]any{"name": "m", "image": "busybox:1"},
					map[string]any{"name": "sidecar", "image": "envoy"},
				},
			}},
		},
	}
	if diff := cmp.Diff(want, Project(live, shape).Object); diff != "" {
		t.Errorf("Project (-want +got):\n%s", diff)
	}
	if Project(nil, shape) != nil {
		t.Error("Project(nil) is not nil")
	}
}

func TestValidatePolicies(t *testing.T) {
	for _, tt := range []struct {
		ann  map[string]string
		errs int
	}{
		{nil, 0},
		{map[string]string{PruneAnnotation: "disabled", ApplyAnnotation: "create-only", ForceAnnotation: "enabled"}, 0},
		{map[string]string{PruneAnnotation: "false"}, 1},
		{map[string]string{ApplyAnnotation: "CreateOnly", ForceAnnotation: "true"}, 2},
		{map[string]string{"fleet.kubectl.io/other": "x"}, 0},
		{map[string]string{PhaseAnnotation: "-2"}, 0},
		{map[string]string{PhaseAnnotation: "first"}, 1},
	} {
		o := &unstructured.Unstructured{Object: map[string]any{}}
		o.SetAnnotations(tt.ann)
		if got := ValidatePolicies(o); len(got) != tt.errs {
			t.Errorf("%v: %d errors (%v), want %d", tt.ann, len(got), got, tt.errs)
		}
	}
}

func TestHealthOfJobs(t *testing.T) {
	job := func(status map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": "j", "generation": int64(1)}, "status": status}}
	}
	for _, tt := range []struct {
		name   string
		status map[string]any
		want   string
	}{
		{"not started", map[string]any{}, "InProgress"},
		{"running", map[string]any{"startTime": "2026-11-22T00:00:00Z", "active": int64(1)}, "InProgress"},
		{"complete", map[string]any{"startTime": "2026-11-22T00:00:00Z", "succeeded": int64(1), "conditions": []any{map[string]any{"type": "Complete", "status": "True"}}}, "Current"},
		{"failed", map[string]any{"startTime": "2026-11-22T00:00:00Z", "failed": int64(6), "conditions": []any{map[string]any{"type": "Failed", "status": "True"}}}, "Failed"},
	} {
		res, err := Health(job(tt.status))
		if err != nil || string(res.Status) != tt.want {
			t.Errorf("%s: %v %v, want %s", tt.name, res, err, tt.want)
		}
	}
	// Other kinds keep kstatus's rules.
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"}}}
	if res, err := Health(cm); err != nil || string(res.Status) != "Current" {
		t.Errorf("ConfigMap: %v %v", res, err)
	}
}

// TestIdentity: an object's identity alone, its own: scoping it leaves the
// object as it was.
func TestIdentity(t *testing.T) {
	o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop", "labels": map[string]any{"a": "b"}}, "spec": map[string]any{"replicas": int64(2)}}}
	id := Identity(o)
	want := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "shop"}}
	if !reflect.DeepEqual(id.Object, want) {
		t.Errorf("identity %v, want %v", id.Object, want)
	}
	id.SetNamespace("")
	if o.GetNamespace() != "shop" {
		t.Error("scoping the identity changed the object")
	}
	if ns := Identity(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "shop"}}}); ns.GetNamespace() != "" || len(ns.Object["metadata"].(map[string]any)) != 1 {
		t.Errorf("a cluster-scoped object's identity: %v", ns.Object)
	}
}

func TestPathAndRef(t *testing.T) {
	for _, tt := range []struct {
		apiVersion, kind, ns, name string
		path, ref                  string
	}{
		{"apps/v1", "Deployment", "web", "api", "Deployment.apps/web/api", "deployment.apps/api"},
		{"v1", "ConfigMap", "web", "settings", "ConfigMap/web/settings", "configmap/settings"},
		{"v1", "Namespace", "", "web", "Namespace/web", "namespace/web"},
		{"example.com/v1", "ÉtatWidget", "", "w", "ÉtatWidget.example.com/w", "étatwidget.example.com/w"},
	} {
		o := &unstructured.Unstructured{}
		o.SetAPIVersion(tt.apiVersion)
		o.SetKind(tt.kind)
		o.SetNamespace(tt.ns)
		o.SetName(tt.name)
		if got := Path(o); got != tt.path {
			t.Errorf("Path: %q; want %q", got, tt.path)
		}
		if got := Ref(o); got != tt.ref {
			t.Errorf("Ref: %q; want %q", got, tt.ref)
		}
	}
}

// InNamespace moves an object without writing into the maps it shares:
// another holder of them sees them as they were.
func TestInNamespace(t *testing.T) {
	for _, tt := range []struct {
		name string
		obj  map[string]any
		ns   string
		want map[string]any
	}{
		{"set", map[string]any{"kind": "ConfigMap", "metadata": map[string]any{"name": "a"}}, "web",
			map[string]any{"kind": "ConfigMap", "metadata": map[string]any{"name": "a", "namespace": "web"}}},
		{"replaced", map[string]any{"kind": "ConfigMap", "metadata": map[string]any{"name": "a", "namespace": "x"}}, "web",
			map[string]any{"kind": "ConfigMap", "metadata": map[string]any{"name": "a", "namespace": "web"}}},
		{"stripped", map[string]any{"kind": "Namespace", "metadata": map[string]any{"name": "a", "namespace": "x"}}, "",
			map[string]any{"kind": "Namespace", "metadata": map[string]any{"name": "a"}}},
		{"no metadata", map[string]any{"kind": "ConfigMap"}, "web",
			map[string]any{"kind": "ConfigMap", "metadata": map[string]any{"namespace": "web"}}},
		{"nothing", nil, "web", map[string]any{"metadata": map[string]any{"namespace": "web"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			shared := &unstructured.Unstructured{Object: tt.obj}
			before := shared.DeepCopy().Object
			o := &unstructured.Unstructured{Object: tt.obj}
			InNamespace(o, tt.ns)
			if d := cmp.Diff(tt.want, o.Object); d != "" {
				t.Errorf("moved (-want +got):\n%s", d)
			}
			if d := cmp.Diff(before, shared.Object); d != "" {
				t.Errorf("the shared maps changed (-before +after):\n%s", d)
			}
		})
	}
}
