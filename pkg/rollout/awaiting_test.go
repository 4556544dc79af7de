package rollout

import "testing"

// TestAwaitingApprovalOf: each cluster held for approval says its own
// reasons, not the whole wave's.
func TestAwaitingApprovalOf(t *testing.T) {
	e := &AwaitingApproval{Wave: "production", Group: "production", Reasons: []string{"prod-eu: web sha256:1a2b is not approved", "prod-us: web sha256:3c4d is not approved", "prod-eu: db sha256:5e6f is not approved"}}
	for cluster, want := range map[string]string{
		"prod-eu": "web sha256:1a2b is not approved; db sha256:5e6f is not approved",
		"prod-us": "web sha256:3c4d is not approved",
		"prod-ap": "its group's other clusters are not approved",
	} {
		if got := e.Of(cluster); got != want {
			t.Errorf("Of(%s) = %q, want %q", cluster, got, want)
		}
	}
}
