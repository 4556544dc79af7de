package kubetest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-fleet/kubectl-fleet/internal/testenv/serverside"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
)

// listsClient is the Client's Lists: kube.NewListsClient over a
// transport the store answers as a server does, a list's items in JSON,
// so that kube.Client.ListEach reads the fake's lists as it reads a
// server's (item by item, skipping what its Fields leave out).
func (c *Cluster) listsClient() rest.Interface {
	// QPS -1: no client-side throttling, which at client-go's default of
	// 5 a second made a test of a dozen lists wait 0.4 s.
	cfg := &rest.Config{Host: "http://kubetest.invalid", QPS: -1}
	lists, err := kube.NewListsClient(cfg, &http.Client{Transport: handled{http.HandlerFunc(c.serveList)}})
	if err != nil {
		c.t.Fatal(err)
	}
	return lists
}

// handled is a transport that a handler answers, in process.
type handled struct{ http.Handler }

func (h handled) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// requests reads a request's path as kube-apiserver does.
var requests = &request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}

// serveList answers a list's request through serve, as the other
// clients' lists: logged, its faults fired, filtered by its selectors;
// an error as a server's Status.
func (c *Cluster) serveList(w http.ResponseWriter, r *http.Request) {
	var body any
	code := http.StatusOK
	list, err := c.listOf(r)
	if body = list; err != nil {
		s := serverside.Status(err)
		body, code = &s, int(s.Code)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}

// listOf is the list a request asks for, read from its path as
// kube-apiserver reads it.
func (c *Cluster) listOf(r *http.Request) (runtime.Object, error) {
	info, err := requests.NewRequestInfo(r)
	if err != nil {
		return nil, err
	}
	gr := schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}
	if !info.IsResourceRequest || info.Verb != "list" {
		return nil, apierrors.NewMethodNotSupported(gr, info.Verb)
	}
	q := r.URL.Query()
	opts := metav1.ListOptions{LabelSelector: q.Get("labelSelector"), FieldSelector: q.Get("fieldSelector")}
	return c.serve(clienttesting.NewListActionWithOptions(gr.WithVersion(info.APIVersion), schema.GroupVersionKind{}, info.Namespace, opts))
}
