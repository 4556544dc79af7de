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
	signedAt := func(s Signer, fleetName, cluster, by, digest string, at time.Time) Approval {
		a := Approval{App: "web", Digest: digest, By: by, At: at, Approver: s.Name}
		a.Signature = base64.StdEncoding.EncodeToString(ed25519.Sign(s.Key, a.Payload(fleetName, cluster)))
		return a
	}
	signed := func(s Signer, fleetName, cluster, by, digest string) Approval {
		return signedAt(s, fleetName, cluster, by, digest, now)
	}
	expiring := rules
	expiring.Expires = 72 * time.Hour
	for _, tt := range []struct {
		name  string
		a     Approval
		want  string // "" when approved
		rules *Rules
	}{
		{"within its group's expiry", signedAt(alice, "shop", "prod", "alice@acme", d, now.Add(-71*time.Hour)), "", &expiring},
		{"past its group's expiry", signedAt(alice, "shop", "prod", "alice@acme", d, now.Add(-73*time.Hour)), "was approved by alice@acme 3d1h ago, and its group's approvals expire after 72h0m0s: approve it again", &expiring},
		{"dated a minute ahead", signedAt(alice, "shop", "prod", "alice@acme", d, now.Add(time.Minute)), "", &expiring},
		{"dated a year ahead, never to expire", signedAt(alice, "shop", "prod", "alice@acme", d, now.AddDate(1, 0, 0)), "its approval is dated 365d from now", &expiring},
		{"old, where approvals do not expire", signedAt(alice, "shop", "prod", "alice@acme", d, now.AddDate(-1, 0, 0)), "", nil},
		{"given by who publishes, as a delivered cluster's context says", signed(alice, "shop", "prod", "system:serviceaccount:ci:deployer", d), "was approved by system:serviceaccount:ci:deployer, who applies it", &Rules{Fleet: "shop", Cluster: "prod", Approvers: rules.Approvers, Self: "system:serviceaccount:ci:deployer"}},
		{"where no one is authenticated", signed(alice, "shop", "prod", "approver alice", d), "", &Rules{Fleet: "shop", Cluster: "prod", Approvers: rules.Approvers}},
		{"signed by an approver", signed(alice, "shop", "prod", "alice@acme", d), "", nil},
		{"no signature", Approval{App: "web", Digest: d, By: "alice@acme", At: now}, "signed by none of the fleet's approvers", nil},
		{"a key not the fleet's", signed(mallory, "shop", "prod", "alice@acme", d), "signed by none of the fleet's approvers", nil},
		{"another cluster's approval", signed(alice, "shop", "stg", "alice@acme", d), "signed by none", nil},
		{"another fleet's approval", signed(alice, "shop2", "prod", "alice@acme", d), "signed by none", nil},
		{"its by edited", func() Approval { a := signed(alice, "shop", "prod", "alice@acme", d); a.By = "bob@acme"; return a }(), "signed by none", nil},
		{"given by who applies", signed(alice, "shop", "prod", "ci-bot", d), "was approved by ci-bot, who applies it", nil},
		{"another render", signed(alice, "shop", "prod", "alice@acme", "sha256:0000"), "is not approved (approved: sha256:0000 by alice@acme", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := rules
			if tt.rules != nil {
				r = *tt.rules
			}
			why := strings.Join(Check(results, map[string]Approval{"web": tt.a}, key, now, r), "; ")
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
