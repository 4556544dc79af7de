package kube

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

var deployments = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}

func TestDecodeItems(t *testing.T) {
	item := `{"metadata":{"name":"a","generation":3,"managedFields":[{"manager":"m","fieldsV1":{"f:spec":{"f:replicas":{}}}},{"manager":"n"}],"labels":{"x":"y"}},"spec":{"replicas":2,"ratio":0.5,"big":12345678901234}}`
	typed := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"b"},"spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"c"}]}}},"status":{"conditions":[{"type":"Available","status":"True"}]}}`
	secret := `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"password":"aHVudGVyMg=="},"stringData":{"token":"t"},"type":"Opaque"}`
	for _, tc := range []struct {
		name, body string
		want       int    // items
		err        string // else
	}{
		{name: "a list as the server writes it", body: `{"kind":"DeploymentList","apiVersion":"apps/v1","metadata":{"resourceVersion":"7"},"items":[` + item + `,` + typed + `]}`, want: 2},
		{name: "a Secret and a CronJob", body: `{"items":[` + secret + `,{"kind":"CronJob","apiVersion":"batch/v1","metadata":{"name":"j"},"spec":{"schedule":"@daily","jobTemplate":{"spec":{"template":{}}}},"binaryData":null}]}`, want: 2},
		{name: "spec null", body: `{"items":[{"metadata":{"name":"a"},"spec":null}]}`, want: 1},
		{name: "items first", body: `{"items":[` + item + `],"kind":"DeploymentList","apiVersion":"apps/v1"}`, want: 1},
		{name: "no item", body: `{"kind":"DeploymentList","apiVersion":"apps/v1","items":[]}`},
		{name: "items null", body: `{"kind":"DeploymentList","items":null}`},
		{name: "no items at all", body: `{"kind":"Status","apiVersion":"v1","status":"Success"}`, err: "not a list"},
		{name: "items twice", body: `{"items":[],"items":[` + item + `]}`, err: "twice"},
		{name: "items not an array", body: `{"items":{"a":1}}`, err: "not an array"},
		{name: "an item not an object", body: `{"items":[1]}`, err: "cannot unmarshal|expected an object"},
		{name: "a null item", body: `{"items":[null]}`, err: "null item"},
		{name: "cut in an item", body: `{"items":[` + item[:30], err: "EOF"},
		{name: "cut after the items", body: `{"items":[]`, err: "EOF"},
		{name: "not JSON", body: `<html>`, err: "invalid character"},
		{name: "an array", body: `[]`, err: "expected"},
		{name: "empty", body: ``, err: "EOF"},
		{name: "managed fields null", body: `{"items":[{"metadata":{"name":"a","managedFields":null}}]}`, want: 1},
		{name: "managed fields not a list", body: `{"items":[{"metadata":{"name":"a","managedFields":{"manager":"m"}}}]}`, want: 1},
		{name: "managed fields cut", body: `{"items":[{"metadata":{"name":"a","managedFields":[{"manager":`, err: "EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, fields := range []Fields{AllFields, NoManagedFields, HealthFields} {
				var got []*unstructured.Unstructured
				err := decodeItems(strings.NewReader(tc.body), deployments, fields, func(u *unstructured.Unstructured) { got = append(got, u) })
				if tc.err != "" {
					if err == nil || !regexp.MustCompile(tc.err).MatchString(err.Error()) {
						t.Fatalf("fields %d: error %v, want one that says %q", fields, err, tc.err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("fields %d: %v", fields, err)
				}
				if len(got) != tc.want {
					t.Fatalf("fields %d: %d items, want %d", fields, len(got), tc.want)
				}
				if tc.want == 0 {
					continue
				}
				// What the dynamic client decodes of the same list.
				whole, err := runtime.Decode(unstructured.UnstructuredJSONScheme, []byte(strings.Replace(tc.body, `"items":`, `"kind":"DeploymentList","apiVersion":"apps/v1","items":`, 1)))
				if err != nil {
					t.Fatal(err)
				}
				list := whole.(*unstructured.UnstructuredList)
				for i := range list.Items {
					want := list.Items[i].Object
					if fields != AllFields {
						unstructured.RemoveNestedField(want, "metadata", "managedFields")
					}
					if fields == HealthFields {
						unstructured.RemoveNestedField(want, "spec", "template")
						unstructured.RemoveNestedField(want, "spec", "jobTemplate")
						unstructured.RemoveNestedField(want, "data")
						unstructured.RemoveNestedField(want, "binaryData")
						unstructured.RemoveNestedField(want, "stringData")
						if spec, ok := want["spec"]; ok && spec == nil {
							delete(want, "spec") // null, left out: nothing reads it
						}
					}
					if !reflect.DeepEqual(got[i].Object, want) {
						t.Errorf("fields %d, item %d:\n%#v\nthe dynamic client's:\n%#v", fields, i, got[i].Object, want)
					}
				}
			}
		})
	}
}

// listServer answers a list's request with the lines of body, flushed
// one by one; after the first, it waits until next is closed (or a
// second passes) and records whether it was.
func listServer(t *testing.T, status int, body []string, next chan struct{}, signalled *bool) *Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/apis/apps/v1/namespaces/web/deployments" || r.URL.Query().Get("labelSelector") != "a=b" {
			http.Error(w, "unexpected request "+r.URL.String(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		for i, line := range body {
			fmt.Fprint(w, line)
			w.(http.Flusher).Flush()
			if i == 0 && next != nil {
				select {
				case <-next:
					*signalled = true
				case <-time.After(time.Second):
				}
			}
		}
	}))
	t.Cleanup(srv.Close)
	lists, err := NewListsClient(&rest.Config{Host: srv.URL}, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	return &Client{Lists: lists}
}

var deploymentsMapping = &meta.RESTMapping{
	Resource:         deployments.GroupVersion().WithResource("deployments"),
	GroupVersionKind: deployments,
	Scope:            meta.RESTScopeNamespace,
}

// ListEach hands each item over as it arrives: the server sends the rest
// of the list only once the first item was handed over (it would wait a
// second and tell, were the list read whole first).
func TestListEachHandsItemsAsTheyArrive(t *testing.T) {
	next, signalled := make(chan struct{}), false
	c := listServer(t, http.StatusOK, []string{
		`{"kind":"DeploymentList","apiVersion":"apps/v1","items":[{"metadata":{"name":"a"}}`,
		`,{"metadata":{"name":"b"}}]}`,
	}, next, &signalled)
	var names []string
	err := c.ListEach(context.Background(), deploymentsMapping, "web", "a=b", AllFields, func(u *unstructured.Unstructured) {
		if names = append(names, u.GetName()); len(names) == 1 {
			close(next)
		}
		if u.GroupVersionKind() != deployments {
			t.Errorf("%s is of %s, want %s", u.GetName(), u.GroupVersionKind(), deployments)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(names, []string{"a", "b"}) {
		t.Errorf("items %v", names)
	}
	if !signalled {
		t.Error("the first item was handed over only once the whole list was read")
	}
}

func TestListEachSaysWhatTheServerRefused(t *testing.T) {
	c := listServer(t, http.StatusForbidden, []string{`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"deployments.apps is forbidden"}`}, nil, nil)
	err := c.ListEach(context.Background(), deploymentsMapping, "web", "a=b", NoManagedFields, func(*unstructured.Unstructured) { t.Error("an item of a refused list") })
	if !apierrors.IsForbidden(err) {
		t.Errorf("error %v, want Forbidden", err)
	}
	cut := listServer(t, http.StatusOK, []string{`{"kind":"DeploymentList","items":[{"metadata":{"name":"a"}},{"metadata":`}, nil, nil)
	var n int
	err = cut.ListEach(context.Background(), deploymentsMapping, "web", "a=b", AllFields, func(*unstructured.Unstructured) { n++ })
	if err == nil || !strings.Contains(err.Error(), "reading the list of deployments") {
		t.Errorf("a list cut short: error %v", err)
	}
	if n != 1 {
		t.Errorf("%d items handed over before the cut, want 1", n)
	}
}

// TestListEachWithoutListsSaysSo: a Client made without NewClient (no
// Lists) gets an error, not a panic that ends every cluster's work.
func TestListEachWithoutListsSaysSo(t *testing.T) {
	err := (&Client{}).ListEach(context.Background(), deploymentsMapping, "web", "", AllFields, func(*unstructured.Unstructured) {})
	if err == nil || !strings.Contains(err.Error(), "no REST client for lists") {
		t.Errorf("error %v", err)
	}
}
