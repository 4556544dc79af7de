package digest_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/digest"
)

// TestDigestsStayTheSame: the digests users have recorded (in ApplySet
// parents, revisions, approvals, plans) are those of this version's
// predecessors, byte for byte: these are what json.Marshal gave before
// the digests were encoded without reflection (encode.AppendJSON).
func TestDigestsStayTheSame(t *testing.T) {
	key := digest.Key("0123456789abcdef0123456789abcdef")
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "web", "namespace": "shop", "labels": map[string]any{"app": "web"}, "annotations": map[string]any{"note": "<a & b>"}},
		"data":     map[string]any{"replicas": "3", "ratio": 0.25, "n": int64(7), "on": true, "none": nil, "list": []any{"x", int64(1)}},
	}}
	secret := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "creds", "namespace": "shop"},
		"data":     map[string]any{"password": "c2VjcmV0"},
	}}
	for what, got := range map[string]string{
		"object":  digest.Object(cm, key),
		"secret":  digest.Object(secret, key),
		"render":  digest.Render([]*unstructured.Unstructured{cm, secret}, key),
		"unkeyed": digest.Unkeyed([]*unstructured.Unstructured{cm, secret}),
	} {
		if want := stable[what]; got != want {
			t.Errorf("%s digest %s, want %s (recorded digests would no longer match)", what, got, want)
		}
	}
}

var stable = map[string]string{
	"object":  "43a7fc8c290ac930e6faaaae0964f76d",
	"secret":  "00bd980be90711766de1d5dca0c306f1",
	"render":  "sha256:90b4ee27c618f77d1b93b0cd25940aaa272b03fe08d549e3c254f2da04608179",
	"unkeyed": "sha256:f3b73bf6d6909995adfceb9345f365b776bd2223ed2ef3f1864797768c52b93b",
}
