package serverside

import (
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
)

// fieldManagers are apimachinery's field managers, one per kind, on a
// deduced schema.
var fieldManagers sync.Map // schema.GroupVersionKind → *managedfields.FieldManager

// FieldManager is apimachinery's own field manager for objects of gvk,
// on a schema deduced from the objects (as for a CRD without one): the
// managedFields, conflicts and removals of a real server's server-side
// apply, without its defaulting (Default) or validation.
func FieldManager(gvk schema.GroupVersionKind) (*managedfields.FieldManager, error) {
	if fm, ok := fieldManagers.Load(gvk); ok {
		return fm.(*managedfields.FieldManager), nil
	}
	fm, err := managedfields.NewDefaultCRDFieldManager(managedfields.NewDeducedTypeConverter(), unstructuredConvertor{}, nopDefaulter{}, unstructuredCreater{}, gvk, gvk.GroupVersion(), "", nil)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	actual, _ := fieldManagers.LoadOrStore(gvk, fm)
	return actual.(*managedfields.FieldManager), nil
}

// unstructuredConvertor converts nothing: every object is of the one
// version it is served in.
type unstructuredConvertor struct{}

func (unstructuredConvertor) Convert(in, out, _ any) error {
	u, ok := in.(*unstructured.Unstructured)
	o, ok2 := out.(*unstructured.Unstructured)
	if !ok || !ok2 {
		return fmt.Errorf("cannot convert %T to %T", in, out)
	}
	o.Object = u.Object
	return nil
}

func (unstructuredConvertor) ConvertToVersion(in runtime.Object, _ runtime.GroupVersioner) (runtime.Object, error) {
	return in, nil
}

func (unstructuredConvertor) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

type nopDefaulter struct{}

func (nopDefaulter) Default(runtime.Object) {}

type unstructuredCreater struct{}

func (unstructuredCreater) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(gvk)
	return u, nil
}
