package publish

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
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
	// Tampered says how the cluster's Flux objects differ from what
	// bootstrap wrote where it matters: the OCIRepository's URL, tag or
	// verify, its signature check not run, the Kustomization's source or
	// path. None of it is to be trusted then.
	Tampered []string `json:"tampered,omitempty"`
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

// ReadFlux reads what cluster's Flux says of fleet's app, through a
// client that may only read, and checks its objects against what
// bootstrap writes for the cluster's tag in r (Tampered).
func (r Registry) ReadFlux(ctx context.Context, dyn dynamic.Interface, d *fleet.Delivery, fleetName, app, cluster string) (Flux, error) {
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
	out.Tampered = append(r.tampered(d, fleetName, app, cluster, src, out), tamperedKustomization(ns, name, ks)...)
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

// tampered says how the OCIRepository src differs from what bootstrap
// writes: another URL or ref, another verify or none, or, with verify,
// no SourceVerified condition though it fetched an artifact.
func (r Registry) tampered(d *fleet.Delivery, fleetName, app, cluster string, src *unstructured.Unstructured, f Flux) []string {
	verify := ""
	if d.Signing != nil {
		verify = VerifySecretName(fleetName)
	}
	want, err := r.Bootstrap(fleetName, app, cluster, FollowOf(d, verify))
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, field := range []string{"url", "ref", "verify"} {
		w, _, _ := unstructured.NestedFieldNoCopy(want[0].Object, "spec", field)
		got, _, _ := unstructured.NestedFieldNoCopy(src.Object, "spec", field)
		if !equality.Semantic.DeepEqual(w, got) {
			out = append(out, fmt.Sprintf("the OCIRepository's %s is %s, not %s", field, brief(got), brief(w)))
		}
	}
	if verify != "" && f.Fetched != "" && condition(src, "SourceVerified") == "" {
		out = append(out, "the OCIRepository verified no signature of what it fetched")
	}
	return out
}

// tamperedKustomization says how ks differs from what bootstrap writes
// where it decides what is applied: its source and path.
func tamperedKustomization(ns, name string, ks *unstructured.Unstructured) []string {
	var out []string
	ref, _, _ := unstructured.NestedStringMap(ks.Object, "spec", "sourceRef")
	if ref["kind"] != "OCIRepository" || ref["name"] != name || ref["namespace"] != "" && ref["namespace"] != ns {
		out = append(out, fmt.Sprintf("the Kustomization reads %s, not OCIRepository %s", brief(ref), name))
	}
	if path, _, _ := unstructured.NestedString(ks.Object, "spec", "path"); path != "./" && path != "" && path != "." {
		out = append(out, fmt.Sprintf("the Kustomization applies path %q, not the artifact's root", path))
	}
	return out
}

// brief is a value of a Flux object said in a line ("none" for none).
func brief(v any) string {
	if v == nil {
		return "none"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// condition is the status of obj's condition of type t, "" for none.
func condition(obj *unstructured.Unstructured, t string) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == t {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}
