package registry

import (
	"context"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/status"
)

// App is the status of app on a delivered cluster c: from its
// registry (the tag, the history's current revision) and, when client is
// not nil (a context reads the cluster), from its Flux and the health of
// the rendered objects (read only: no dry run, so no drift is seen).
func (r Fleet) App(ctx context.Context, c *fleet.Cluster, client *kube.Client, app string, objs []*unstructured.Unstructured) (status.App, error) {
	f, d := r.Fleet, r.Fleet.DeliveryOf(c)
	reg, err := r.registry(c)
	if err != nil {
		return status.App{}, err
	}
	out := status.App{App: app, Published: &status.Published{Repository: publish.Scheme + reg.Base + "/" + app, Tag: c.Name}, Objects: []status.Object{}}
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
		out.RolledBack = cur.AutomaticRollback()
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
func healthOf(ctx context.Context, client *kube.Client, o *unstructured.Unstructured) status.Object {
	obj := status.Object{Ref: object.Ref(o), Namespace: o.GetNamespace()}
	h, err := apply.Health(ctx, client, o.DeepCopy())
	switch {
	case apierrors.IsNotFound(err):
		obj.Health = status.NotFound
	case err != nil:
		obj.Health, obj.Error = string(kstatus.UnknownStatus), err.Error()
	default:
		obj.Health, obj.Message = string(h.Status), h.Message
	}
	return obj
}
