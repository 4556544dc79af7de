package kubetest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
)

// listsClient is the Client's Lists: kube.NewListsClient over a
// transport the store answers as a server does, a list's items in JSON,
// so that kube.Client.ListEach reads the fake's lists as it reads a
// server's (item by item, skipping what its Fields leave out).
func (c *Cluster) listsClient() rest.Interface {
	lists, err := kube.NewListsClient(&rest.Config{Host: "http://kubetest.invalid"}, &http.Client{Transport: transport(c.serveHTTP)})
	if err != nil {
		c.t.Fatal(err)
	}
	return lists
}

type transport func(*http.Request) (*http.Response, error)

func (f transport) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// serveHTTP answers a list's request (GET /api/v1/[namespaces/NS/]RESOURCE
// or /apis/GROUP/VERSION/…) through serve, as the other clients' lists:
// logged, its faults fired, filtered by its selectors.
func (c *Cluster) serveHTTP(r *http.Request) (*http.Response, error) {
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	gvr, ns, ok := listPath(r.URL.Path)
	if !ok || r.Method != http.MethodGet {
		return answer(r, apierrors.NewMethodNotSupported(gvr.GroupResource(), r.Method+" "+r.URL.Path))
	}
	q := r.URL.Query()
	opts := metav1.ListOptions{LabelSelector: q.Get("labelSelector"), FieldSelector: q.Get("fieldSelector")}
	sel, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return answer(r, apierrors.NewBadRequest(err.Error()))
	}
	obj, err := c.serve(clienttesting.NewListActionWithOptions(gvr, schema.GroupVersionKind{}, ns, opts))
	if err != nil {
		return answer(r, err)
	}
	list := obj.(*unstructured.UnstructuredList)
	items := []any{}
	for i := range list.Items {
		if sel.Matches(labels.Set(list.Items[i].GetLabels())) {
			items = append(items, list.Items[i].Object)
		}
	}
	body, err := json.Marshal(map[string]any{"apiVersion": list.GetAPIVersion(), "kind": list.GetKind(), "metadata": map[string]any{"resourceVersion": list.GetResourceVersion()}, "items": items})
	if err != nil {
		return nil, err
	}
	return response(r, http.StatusOK, body), nil
}

// listPath reads a list's resource and namespace from its path.
func listPath(path string) (gvr schema.GroupVersionResource, ns string, ok bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		gvr.Version, parts = parts[1], parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		gvr.Group, gvr.Version, parts = parts[1], parts[2], parts[3:]
	default:
		return gvr, "", false
	}
	switch len(parts) {
	case 1:
		gvr.Resource = parts[0]
	case 3:
		if parts[0] != "namespaces" {
			return gvr, "", false
		}
		ns, gvr.Resource = parts[1], parts[2]
	default:
		return gvr, "", false
	}
	return gvr, ns, true
}

// answer is err as a server says it: a Status of its code.
func answer(r *http.Request, err error) (*http.Response, error) {
	var status metav1.Status
	if s, ok := err.(apierrors.APIStatus); ok {
		status = s.Status()
	} else {
		status = apierrors.NewInternalError(err).Status()
	}
	status.Kind, status.APIVersion = "Status", "v1"
	body, merr := json.Marshal(status)
	if merr != nil {
		return nil, merr
	}
	return response(r, int(status.Code), body), nil
}

func response(r *http.Request, code int, body []byte) *http.Response {
	return &http.Response{
		StatusCode: code, Status: http.StatusText(code), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": {"application/json"}},
		Body:    io.NopCloser(bytes.NewReader(body)),
		Request: r, ContentLength: int64(len(body)),
	}
}
