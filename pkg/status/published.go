package status

import (
	"context"
	"strings"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
)

// Published is what a delivered cluster runs of an app: the artifact
// its tag points at and, when a context reads the cluster, what its
// Flux says (the revision it applied, Ready, since when).
type Published struct {
	// Repository is the app's (oci://…), Tag the cluster's there, and
	// Artifact what the tag points at ("" for no tag).
	Repository string `json:"repository"`
	Tag        string `json:"tag"`
	Artifact   string `json:"artifact,omitempty"`
	// Current is the artifact of the current revision the registry's
	// history records ("" for none): a tag elsewhere was moved by
	// someone else (TagMoved).
	Current string `json:"current,omitempty"`
	// Flux is nil when no context reads the cluster.
	Flux *publish.Flux `json:"flux,omitempty"`
	// FluxError is why Flux's objects could not be read.
	FluxError string `json:"fluxError,omitempty"`
}

// NotObserved is the state of an app published to a cluster no context
// reads: nothing says what it runs. TagMoved is that of an app whose tag
// is not at its current revision's artifact: someone else moved it
// (apply and reconcile move it back).
const (
	NotObserved = "NotObserved"
	TagMoved    = "TagMoved"
)

// state is what Published says of an app, or "" when its objects do:
// NotObserved, OutOfSync while Flux has not applied the tag's artifact,
// Failed when it failed to. Once it applied it, a Ready that is Unknown
// is Flux reconciling it again (every interval): the objects' health
// says how they are.
func (p *Published) state() string {
	switch {
	case p == nil:
		return ""
	case p.Current != "" && p.Artifact != p.Current:
		return TagMoved
	case p.Flux == nil:
		return NotObserved
	case len(p.Flux.Tampered) > 0 || p.Flux.Failed(p.Artifact) != "" || p.Flux.Refused(p.Artifact) != "":
		return Failed
	case !publish.Is(p.Flux.Applied, p.Artifact):
		return OutOfSync
	}
	return ""
}

// cell is what Published says of an app in a line, or "".
func (p *Published) cell() string {
	switch p.state() {
	case TagMoved:
		return "tag moved to " + publish.Short(p.Artifact) + " by someone else, not the current revision's " + publish.Short(p.Current)
	case NotObserved:
		return "published " + publish.Short(p.Artifact) + ", not observed"
	case Failed:
		if len(p.Flux.Tampered) > 0 {
			return "Flux objects not what bootstrap wrote: " + strings.Join(p.Flux.Tampered, "; ")
		}
		return "Flux failed " + publish.Short(p.Artifact) + ": " + p.Flux.Status()
	case OutOfSync:
		return "published " + publish.Short(p.Artifact) + ", Flux at " + publish.Short(p.Flux.Applied)
	}
	return ""
}

// PublishedApp is the status of app on a delivered cluster c: from its
// registry (the tag, the history's current revision) and, when client is
// not nil (a context reads the cluster), from its Flux and the health of
// the rendered objects (read only: no dry run, so no drift is seen).
func PublishedApp(ctx context.Context, f *fleet.Fleet, c *fleet.Cluster, client *kube.Client, app string, objs []*unstructured.Unstructured) (App, error) {
	d := f.DeliveryOf(c)
	reg, err := publish.For(f, d)
	if err != nil {
		return App{}, err
	}
	out := App{App: app, Published: &Published{Repository: publish.Scheme + reg.Base + "/" + app, Tag: c.Name}, Objects: []Object{}}
	at, found, err := reg.Resolve(ctx, app, c.Name)
	if err != nil {
		return out, err
	}
	if !found {
		out.NotDeployed = true
		return out, nil
	}
	out.Published.Artifact = at.String()
	h, err := reg.History(ctx, app, c.Name)
	if err != nil {
		return out, err
	}
	if cur, ok := h.Record(); ok {
		out.Published.Current = cur.Artifact
		v := cur.Verification
		out.Revision, out.Digest, out.Verification, out.LastApplied = cur.Number, cur.Digest, &v, cur.Time.String()
	}
	if client == nil {
		return out, nil
	}
	flux, err := reg.ReadFlux(ctx, client.Dynamic, d, f.Metadata.Name, app, c.Name)
	if err != nil {
		out.Published.FluxError = err.Error()
		return out, nil
	}
	out.Published.Flux = &flux
	for _, o := range objs {
		out.Objects = append(out.Objects, healthOf(ctx, client, o))
	}
	return out, nil
}

// healthOf is an object's health as read, nothing compared.
func healthOf(ctx context.Context, client *kube.Client, o *unstructured.Unstructured) Object {
	obj := Object{Ref: object.Ref(o), Namespace: o.GetNamespace()}
	h, err := apply.Health(ctx, client, o.DeepCopy())
	switch {
	case apierrors.IsNotFound(err):
		obj.Health = NotFound
	case err != nil:
		obj.Health, obj.Error = string(kstatus.UnknownStatus), err.Error()
	default:
		obj.Health, obj.Message = string(h.Status), h.Message
	}
	return obj
}
