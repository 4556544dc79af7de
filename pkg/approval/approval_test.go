package approval

import (
	"crypto/ed25519"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/digest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
)

// TestCheck: an approval counts only when an approver of the fleet
// signed exactly this fleet, cluster, app and render, and someone other
// than the identity that applies gave it.
func TestCheck(t *testing.T) {
	alice, _, alicePub, err := GenerateKey("alice")
	if err != nil {
		t.Fatal(err)
	}
	mallory, _, _, err := GenerateKey("alice") // claims to be alice
	if err != nil {
		t.Fatal(err)
	}
	key := digest.Key("0123456789abcdef0123456789abcdef")
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "web"}}}
	results := []render.Result{{Target: render.Target{App: "web"}, Objects: []*unstructured.Unstructured{obj}}}
	d := digest.Render(results[0].Objects, key)
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	rules := Rules{Fleet: "shop", Cluster: "prod", Approvers: []fleet.Approver{{Name: "alice", PublicKey: alicePub}}, Self: "ci-bot"}
	signed := func(s Signer, fleetName, cluster, by, digest string) Approval {
		a := Approval{App: "web", Digest: digest, By: by, At: now, Approver: s.Name}
		a.Signature = base64.StdEncoding.EncodeToString(ed25519.Sign(s.Key, a.Payload(fleetName, cluster)))
		return a
	}
	for _, tt := range []struct {
		name string
		a    Approval
		want string // "" when approved
	}{
		{"signed by an approver", signed(alice, "shop", "prod", "alice@acme", d), ""},
		{"no signature", Approval{App: "web", Digest: d, By: "alice@acme", At: now}, "signed by none of the fleet's approvers"},
		{"a key not the fleet's", signed(mallory, "shop", "prod", "alice@acme", d), "signed by none of the fleet's approvers"},
		{"another cluster's approval", signed(alice, "shop", "stg", "alice@acme", d), "signed by none"},
		{"another fleet's approval", signed(alice, "shop2", "prod", "alice@acme", d), "signed by none"},
		{"its by edited", func() Approval { a := signed(alice, "shop", "prod", "alice@acme", d); a.By = "bob@acme"; return a }(), "signed by none"},
		{"given by who applies", signed(alice, "shop", "prod", "ci-bot", d), "was approved by ci-bot, who applies it"},
		{"another render", signed(alice, "shop", "prod", "alice@acme", "sha256:0000"), "is not approved (approved: sha256:0000 by alice@acme"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			why := strings.Join(Check(results, map[string]Approval{"web": tt.a}, key, now, rules), "; ")
			if tt.want == "" && why != "" || !strings.Contains(why, tt.want) {
				t.Errorf("Check = %q, want %q", why, tt.want)
			}
		})
	}
}

// TestLoadSigner: a key signs only as one of the fleet's approvers.
func TestLoadSigner(t *testing.T) {
	dir := t.TempDir()
	_, alicePEM, alicePub, err := GenerateKey("alice")
	if err != nil {
		t.Fatal(err)
	}
	_, otherPEM, _, err := GenerateKey("other")
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	approvers := []fleet.Approver{{Name: "alice", PublicKey: alicePub}}
	if s, err := LoadSigner(write("alice.pem", alicePEM), approvers); err != nil || s.Name != "alice" {
		t.Errorf("alice's key: %+v, %v", s.Name, err)
	}
	for file, want := range map[string]string{
		write("other.pem", otherPEM):           "is not one of the fleet's approvers (alice)",
		write("junk.pem", []byte("not a key")): "is not PEM",
		filepath.Join(dir, "missing.pem"):      "no such file",
	} {
		if _, err := LoadSigner(file, approvers); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", file, err, want)
		}
	}
}
