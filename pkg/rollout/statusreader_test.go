package rollout

import (
	"context"
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/status"
)

// StatusReader serves what status read: an app applied before revisions
// were recorded exists; one status did not read is an error.
func TestStatusReader(t *testing.T) {
	s := StatusReader{"c1": {
		{App: "web", Revision: 3, Digest: "d", Verification: &revision.Verification{State: revision.Verified}},
		{App: "old", LastApplied: "2025-01-02T03:04:05Z"},
	}}
	ctx := context.Background()
	if r, err := s.Release(ctx, "c1", "web"); err != nil || !r.Exists || r.Revision != 3 || r.Digest != "d" || r.Verification.State != revision.Verified {
		t.Errorf("web: %+v, %v", r, err)
	}
	if r, err := s.Release(ctx, "c1", "old"); err != nil || !r.Exists || r.Revision != 0 {
		t.Errorf("old: %+v, %v", r, err)
	}
	if _, err := s.Release(ctx, "c2", "web"); err == nil {
		t.Error("a cluster status did not read: no error")
	}
	var _ Reader = StatusReader(map[string][]status.App{})
}
