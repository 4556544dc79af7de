package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/jsonpath"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
)

// ObjectGetter reads one live object.
type ObjectGetter interface {
	Get(ctx context.Context, apiVersion, kind, namespace, name string) (*unstructured.Unstructured, error)
}

// ReadAttributes evaluates a cluster's attributesFrom against live objects.
// Later entries win. A missing object or field is an error unless the entry
// is optional, in which case its attributes stay unset.
func ReadAttributes(ctx context.Context, g ObjectGetter, from []fleet.AttributeFrom) (map[string]any, error) {
	out := map[string]any{}
	for _, a := range from {
		ref := a.Kind + " " + a.Name
		if a.Namespace != "" {
			ref = a.Kind + " " + a.Namespace + "/" + a.Name
		}
		obj, err := g.Get(ctx, a.APIVersion, a.Kind, a.Namespace, a.Name)
		if err != nil {
			if a.Optional && apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("attributesFrom %s: %w", ref, err)
		}
		for name, expr := range a.Attributes {
			jp := jsonpath.New(name)
			if err := jp.Parse(expr); err != nil {
				return nil, fmt.Errorf("attributesFrom %s: attribute %s: %w", ref, name, err)
			}
			results, err := jp.FindResults(obj.Object)
			if err != nil || len(results) == 0 || len(results[0]) == 0 {
				if a.Optional {
					continue
				}
				return nil, fmt.Errorf("attributesFrom %s: attribute %s: %s finds nothing", ref, name, expr)
			}
			var b strings.Builder
			if err := jp.PrintResults(&b, results[0]); err != nil {
				return nil, fmt.Errorf("attributesFrom %s: attribute %s: %w", ref, name, err)
			}
			out[name] = b.String()
		}
	}
	return out, nil
}

// Get reads one object by its apiVersion, kind, namespace and name; the
// Client is so an ObjectGetter.
func (c *Client) Get(ctx context.Context, apiVersion, kind, namespace, name string) (*unstructured.Unstructured, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, err
	}
	m, err := c.Mapper.RESTMapping(gv.WithKind(kind).GroupKind(), gv.Version)
	if err != nil {
		return nil, err
	}
	if m.Scope.Name() == meta.RESTScopeNameRoot {
		if namespace != "" {
			return nil, errors.New("a namespace is given for a cluster-scoped kind")
		}
		return c.Dynamic.Resource(m.Resource).Get(ctx, name, metav1.GetOptions{})
	}
	return c.Dynamic.Resource(m.Resource).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
}
