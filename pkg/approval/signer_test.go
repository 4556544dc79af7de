package approval

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
)

// TestSignerFor: --key first, then $KUBECTL_FLEET_APPROVER_KEY; with
// neither, an error that names the approvers, or says there are none.
func TestSignerFor(t *testing.T) {
	dir := t.TempDir()
	var approvers []fleet.Approver
	paths := map[string]string{}
	for _, name := range []string{"alice", "bob"} {
		_, priv, pub, err := GenerateKey(name)
		if err != nil {
			t.Fatal(err)
		}
		paths[name] = filepath.Join(dir, name+".pem")
		if err := os.WriteFile(paths[name], priv, 0o600); err != nil {
			t.Fatal(err)
		}
		approvers = append(approvers, fleet.Approver{Name: name, PublicKey: pub})
	}
	for _, tt := range []struct {
		name, key, env string
		approvers      []fleet.Approver
		signer, err    string
	}{
		{"--key", paths["alice"], "", approvers, "alice", ""},
		{"--key over env", paths["alice"], paths["bob"], approvers, "alice", ""},
		{"env", "", paths["bob"], approvers, "bob", ""},
		{"neither", "", "", approvers, "", "approve signs with an approver's key: give --key or $KUBECTL_FLEET_APPROVER_KEY (the fleet's approvers: alice, bob)"},
		{"no approvers", "", "", nil, "", "approve signs with an approver's key: give --key or $KUBECTL_FLEET_APPROVER_KEY (the fleet's approvers: none: list them under approvers: in the fleet file)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(KeyEnv, tt.env)
			s, err := SignerFor(tt.key, tt.approvers)
			if got := errString(err); got != tt.err || s.Name != tt.signer {
				t.Errorf("signer %q, error %q; want %q, %q", s.Name, got, tt.signer, tt.err)
			}
		})
	}
}

// TestSaid: approve's line for a cluster names each app approved with
// its digest, or is empty.
func TestSaid(t *testing.T) {
	d := "sha256:0123456789abcdef0123"
	if got, want := Said([]Approval{{App: "web", Digest: d}, {App: "api", Digest: "sha256:1"}}), "approved web sha256:0123456789ab, api sha256:1"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if got := Said(nil); got != "" {
		t.Errorf("none: %q", got)
	}
}

// errString is err's message, "" for nil.
func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
