package revision

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
)

// VerificationAnnotation holds, on a revision's first Secret, whether its
// release passed its gates on that cluster (Verification, as JSON). A
// revision without it is unverified: it was recorded by a run that has
// not finished its gates, or that died, or by an older plugin.
const VerificationAnnotation = "fleet.kubectl.io/verification"

// State is a release's state on one cluster.
type State string

// The states of a release.
const (
	// Verified: applied, and every gate that applies to it passed
	// (healthy when waited for, tests, the group's checks and soak).
	Verified State = "verified"
	// Failed: a gate or the apply itself failed; Reason says which.
	Failed State = "failed"
	// Unverified: the gates did not run, or have not finished (skipped
	// with --skip-gates, a rollback, another app failed first, a run
	// that died).
	Unverified State = "unverified"
)

// Verification is what the gates said of a revision on its cluster.
type Verification struct {
	State State     `json:"state"`
	Time  time.Time `json:"time,omitzero"`
	// Reason says why a release failed or is unverified, gate first:
	// "check smoke: exit status 1", "gates skipped (--skip-gates)".
	Reason string `json:"reason,omitempty"`
	// Gates are the gates it went through: "applied", "healthy", "tests",
	// "check smoke", "soak 5m0s".
	Gates []string `json:"gates,omitempty"`
}

// String is the state with its reason: "verified", "failed: check smoke:
// exit status 1", "unverified: gates skipped (--skip-gates)".
func (v Verification) String() string {
	s := string(v.State)
	if s == "" {
		s = string(Unverified)
	}
	if v.Reason != "" && v.State != Verified {
		s += ": " + v.Reason
	}
	return s
}

// verificationOf reads a revision Secret's verification; none recorded,
// or one that cannot be read, is unverified.
func verificationOf(m *metav1.ObjectMeta) Verification {
	raw, ok := m.Annotations[VerificationAnnotation]
	if !ok {
		return Verification{State: Unverified}
	}
	var v Verification
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return Verification{State: Unverified, Reason: "the recorded verification cannot be read"}
	}
	switch v.State {
	case Verified, Failed, Unverified:
	default:
		return Verification{State: Unverified, Reason: fmt.Sprintf("unknown state %q recorded", v.State)}
	}
	return v
}

// stamped is v with the time it was said, now unless set.
func (v Verification) stamped() Verification {
	if v.Time.IsZero() {
		v.Time = time.Now().UTC().Truncate(time.Second)
	}
	return v
}

// Verify records v on revision n of an app: a merge patch of one
// annotation of its first Secret, so that the next run, and any other
// machine, sees whether this release passed its gates here.
func Verify(ctx context.Context, c *kube.Client, app string, n int, v Verification) error {
	info, err := json.Marshal(v.stamped())
	if err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{VerificationAnnotation: string(info)}}})
	if err != nil {
		return err
	}
	_, err = c.Metadata.Resource(secrets).Namespace(inventory.Namespace).Patch(ctx, SecretName(app, n), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: fieldOwner})
	if err != nil {
		return fmt.Errorf("recording that revision %d of app %s is %s: %w", n, app, v.State, err)
	}
	return nil
}

// Get reads the record of revision n of an app, with its verification,
// from its first Secret's metadata (no object is read).
func Get(ctx context.Context, c *kube.Client, app string, n int) (Revision, error) {
	m, err := c.Metadata.Resource(secrets).Namespace(inventory.Namespace).Get(ctx, SecretName(app, n), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return Revision{}, fmt.Errorf("app %s has no revision %d here: %w", app, n, ErrNotFound)
	}
	if err != nil {
		return Revision{}, fmt.Errorf("reading revision %d of app %s: %w", n, app, err)
	}
	return infoOf(&m.ObjectMeta)
}

// Recorded is Get for a revision an app's set names current: one whose
// record is gone is no error but unverified, and says so.
func Recorded(ctx context.Context, c *kube.Client, app string, n int) (Revision, error) {
	r, err := Get(ctx, c, app, n)
	if errors.Is(err, ErrNotFound) {
		return Revision{App: app, Number: n, Verification: Verification{State: Unverified, Reason: "its revision record is gone"}}, nil
	}
	return r, err
}

// VerificationOf reads what the gates said of revision n of app
// (Recorded's).
func VerificationOf(ctx context.Context, c *kube.Client, app string, n int) (Verification, error) {
	r, err := Recorded(ctx, c, app, n)
	return r.Verification, err
}

// AutomaticRollback is r's description when an automatic rollback made
// it (it remembers the render it took away: Undid), else "".
func (r Revision) AutomaticRollback() string {
	if r.Undid == "" {
		return ""
	}
	return r.Description
}

// Label is a revision's number and state in a few words: "r7 verified",
// "r8 failed: check smoke: exit status 1".
func (r Revision) Label() string {
	return strings.TrimSpace(fmt.Sprintf("r%d %s", r.Number, r.Verification))
}
