package diff

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/change"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
)

// Published is what publishing objs for a delivered cluster would
// change, against the objects of the artifact its tag points at now
// (published; nil when it has none): no cluster is asked, nothing is
// sent. An object not in published is created, one no longer rendered
// is pruned (the cluster's Flux prunes it), one whose YAML differs is
// changed, as the two artifacts hold them. What Flux did to the live
// objects since is not seen here. Only o's App, Cluster, Context and
// SkipUnchanged count: Flux applies the artifact whole, so no field is
// ignored.
func Published(objs, published []*unstructured.Unstructured, o Options) ([]Object, error) {
	before := make(map[string]*unstructured.Unstructured, len(published))
	for _, p := range published {
		before[object.Path(p)] = p
	}
	var out []Object
	add := func(d Object) error {
		if d.Action == change.Unchanged && o.SkipUnchanged {
			return nil
		}
		if err := finish(&d, Options{App: o.App, Cluster: o.Cluster, Context: o.Context, ShowSecrets: true}); err != nil {
			return err
		}
		out = append(out, d)
		return nil
	}
	for _, obj := range objs {
		path := object.Path(obj)
		d := Object{Ref: object.Ref(obj), Path: path, Merged: object.Normalize(obj)}
		prev, ok := before[path]
		delete(before, path)
		switch {
		case !ok:
			d.Action = change.Created
		default:
			d.Live = object.Normalize(prev)
			d.Action = change.Unchanged
			if !equalYAML(d.Live, d.Merged) {
				d.Action = change.Configured
			}
		}
		if err := add(d); err != nil {
			return nil, err
		}
	}
	for _, p := range published {
		if _, gone := before[object.Path(p)]; gone {
			if err := add(Object{Ref: object.Ref(p), Path: object.Path(p), Action: change.Pruned, Live: object.Normalize(p)}); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

func equalYAML(a, b *unstructured.Unstructured) bool {
	x, err1 := object.ToYAML(a)
	y, err2 := object.ToYAML(b)
	return err1 == nil && err2 == nil && x == y
}
