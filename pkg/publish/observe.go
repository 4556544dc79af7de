package publish

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
)

// The Flux kinds a cluster follows its tags with (Bootstrap).
var (
	OCIRepositories = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "ocirepositories"}
	Kustomizations  = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
)

// Name is the name of the Flux objects that make a cluster follow app's
// tag of fleet.
func Name(fleet, app string) string { return fleet + "-" + app }

// Flux is what a cluster's Flux says of one app: the revision its
// OCIRepository fetched, the one its Kustomization applied last, and
// whether the Kustomization is Ready (applied and, with wait, healthy),
// since when and why not.
type Flux struct {
	// Fetched is the OCIRepository's artifact revision (tag@sha256:…).
	Fetched string `json:"fetched,omitempty"`
	// Applied and Attempted are the Kustomization's lastAppliedRevision
	// and lastAttemptedRevision.
	Applied   string `json:"applied,omitempty"`
	Attempted string `json:"attempted,omitempty"`
	// Ready is the Kustomization's Ready condition: True, False or
	// Unknown; Since its last transition, Message why.
	Ready   string    `json:"ready,omitempty"`
	Since   time.Time `json:"since,omitzero"`
	Message string    `json:"message,omitempty"`
	// SourceReady is the OCIRepository's Ready condition, SourceMessage
	// why it is not ("" when it is): an artifact it cannot pull or
	// verify.
	SourceReady   string `json:"sourceReady,omitempty"`
	SourceMessage string `json:"sourceMessage,omitempty"`
	// Wait: the Kustomization waits for its objects' health, so Ready
	// says they are healthy.
	Wait bool `json:"wait,omitempty"`
}

// Status says where Flux is, for a wait that ran out: what it fetched,
// applied and why it is not Ready.
func (f Flux) Status() string {
	var parts []string
	if f.SourceMessage != "" {
		parts = append(parts, "the OCIRepository says: "+f.SourceMessage)
	}
	parts = append(parts, "fetched "+orNone(f.Fetched), "applied "+orNone(f.Applied), "Ready "+f.Ready)
	if f.Message != "" && f.Ready != "True" {
		parts = append(parts, f.Message)
	}
	return strings.Join(parts, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}

// Is reports whether a Flux revision (tag@sha256:…, or the digest
// alone) is the artifact d.
func Is(revision, d string) bool {
	return d != "" && (revision == d || strings.HasSuffix(revision, "@"+d))
}

// Converged reports whether Flux applied the artifact d and is Ready.
func (f Flux) Converged(d string) bool { return Is(f.Applied, d) && f.Ready == "True" }

// Failed is why Flux failed to apply d ("" when it did not fail): its
// Kustomization attempted d and is not Ready.
func (f Flux) Failed(d string) string {
	if Is(f.Attempted, d) && f.Ready == "False" {
		return f.Message
	}
	return ""
}

// Refused is why the OCIRepository does not take an artifact other than
// the one it fetched ("" when nothing says it does not): it is not
// Ready, and says why (a signature that does not verify, an artifact it
// cannot pull).
func (f Flux) Refused(d string) string {
	if f.SourceReady == "False" && !Is(f.Fetched, d) {
		return f.SourceMessage
	}
	return ""
}

// ReadFlux reads what the cluster's Flux says of fleet's app, through a
// client that may only read.
func ReadFlux(ctx context.Context, dyn dynamic.Interface, d *fleet.Delivery, fleetName, app string) (Flux, error) {
	ns := d.Namespace
	if ns == "" {
		ns = fleet.DefaultDeliveryNamespace
	}
	name := Name(fleetName, app)
	var out Flux
	src, err := dyn.Resource(OCIRepositories).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return out, notFollowing("OCIRepository", ns, name, err)
	}
	out.Fetched, _, _ = unstructured.NestedString(src.Object, "status", "artifact", "revision")
	var msg string
	if out.SourceReady, _, msg = ready(src); out.SourceReady != "True" {
		out.SourceMessage = msg
	}
	ks, err := dyn.Resource(Kustomizations).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return out, notFollowing("Kustomization", ns, name, err)
	}
	out.Applied, _, _ = unstructured.NestedString(ks.Object, "status", "lastAppliedRevision")
	out.Attempted, _, _ = unstructured.NestedString(ks.Object, "status", "lastAttemptedRevision")
	out.Ready, out.Since, out.Message = ready(ks)
	out.Wait, _, _ = unstructured.NestedBool(ks.Object, "spec", "wait")
	return out, nil
}

// notFollowing says a Flux object that could not be read, and how to
// make one when there is none.
func notFollowing(kind, ns, name string, err error) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("the cluster has no %s %s/%s: it does not follow its tag (kubectl fleet publish --bootstrap writes what does)", kind, ns, name)
	}
	return fmt.Errorf("reading the %s %s/%s: %w", kind, ns, name, err)
}

// ready is an object's Ready condition: its status, last transition and
// message.
func ready(obj *unstructured.Unstructured) (status string, since time.Time, message string) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != "Ready" {
			continue
		}
		status, _ = m["status"].(string)
		message, _ = m["message"].(string)
		message = strings.Join(strings.Fields(message), " ") // Flux's run over lines
		if t, ok := m["lastTransitionTime"].(string); ok {
			since, _ = time.Parse(time.RFC3339, t)
		}
		return status, since, message
	}
	return "Unknown", time.Time{}, ""
}
