package publish_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/internal/registrytest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
)

// A signing delivery's records are signed as written and verified as
// read: one written with push rights alone, or a signed one moved to
// another tag, is an UnsignedRecordError; a reader with the public key
// only verifies them; a delivery that does not sign reads plain JSON.
func TestRecords(t *testing.T) {
	f, d, reg := registrytest.SignedDelivery(t)
	ctx := context.Background()
	h := publish.History{Current: 1, Revisions: []revision.Revision{{App: "web", Number: 1, Digest: "sha256:a", Verification: revision.Verification{State: revision.Failed, Reason: "check smoke"}}}}
	if err := reg.SaveHistory(ctx, "web", "edge-1", h); err != nil {
		t.Fatal(err)
	}
	got, err := reg.History(ctx, "web", "edge-1")
	if err != nil || got.Revisions[0].Verification.State != revision.Failed {
		t.Fatalf("a signed history read back: %+v, %v", got, err)
	}
	// The public key alone verifies.
	reader, err := publish.For(f, registrytest.KeylessDelivery(t, f, d))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reader.History(ctx, "web", "edge-1"); err != nil {
		t.Fatalf("read with the public key only: %v", err)
	}
	if err := reader.SaveHistory(ctx, "web", "edge-1", h); !errors.Is(err, publish.ErrNoRecordKey) {
		t.Fatalf("a write without the private key: %v", err)
	}

	unsigned := func(name string, err error) {
		t.Helper()
		var u *publish.UnsignedRecordError
		if !errors.As(err, &u) || !strings.Contains(err.Error(), "is not signed by the delivery's key") {
			t.Errorf("%s: %v, want an unsigned record", name, err)
		}
	}
	// Push rights alone: the failed revision written verified.
	forged := h
	forged.Revisions = []revision.Revision{h.Revisions[0]}
	forged.Revisions[0].Verification = revision.Verification{State: revision.Verified}
	if err := reg.WithoutRecordKeys().SaveHistory(ctx, "web", "edge-1", forged); err != nil {
		t.Fatal(err)
	}
	_, err = reg.History(ctx, "web", "edge-1")
	unsigned("a forged verified", err)
	// A signed record of edge-2 put under edge-1's tag.
	if err := reg.SaveHistory(ctx, "web", "edge-2", forged); err != nil {
		t.Fatal(err)
	}
	moved, _, err := reg.Resolve(ctx, "web", publish.HistoryTag("edge-2"))
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Tag(ctx, "web", publish.HistoryTag("edge-1"), moved); err != nil {
		t.Fatal(err)
	}
	_, err = reg.History(ctx, "web", "edge-1")
	unsigned("another tag's signed record", err)
	// Signed with another key.
	other, _, otherReg := registrytest.SignedDelivery(t)
	_ = other
	otherReg.Base = reg.Base
	if err := otherReg.SaveHistory(ctx, "web", "edge-1", forged); err != nil {
		t.Fatal(err)
	}
	_, err = reg.History(ctx, "web", "edge-1")
	unsigned("another key's", err)
	// A delivery that does not sign reads it as it is.
	if h, err := reg.WithoutRecordKeys().History(ctx, "web", "edge-1"); err != nil || h.Revisions[0].Verification.State != revision.Verified {
		t.Errorf("plain read: %+v, %v", h, err)
	}
}
