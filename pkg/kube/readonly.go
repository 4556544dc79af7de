package kube

import (
	"fmt"
	"net/http"
	"strings"

	"k8s.io/client-go/rest"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
)

// ContextOf is the context that reaches c. A cluster without one (a
// delivered cluster no one reads) gets a name no kubeconfig has: a path
// that forgot it cannot be read fails to load, kubectl's and checks'
// too, rather than fall back to the kubeconfig's current context,
// another cluster.
func ContextOf(c *fleet.Cluster) string {
	if c.Context != "" {
		return c.Context
	}
	return "(cluster " + c.Name + " has no context: published to, never read)"
}

// WriteRefusedError is a request the client of a delivered cluster
// refused to send: nothing but Flux writes to such a cluster.
type WriteRefusedError struct {
	Cluster, Method, Path string
}

func (e *WriteRefusedError) Error() string {
	return fmt.Sprintf("cluster %s is delivered through a registry: nothing writes to it but its Flux (refused %s %s)", e.Cluster, e.Method, e.Path)
}

// readOnly makes a delivered cluster's client read and nothing else,
// whatever path asks it to write (a lock, a record, an approval, an
// apply, a dry run): GET, HEAD and OPTIONS pass, and so do the reviews
// that ask the server who the user is and what they may do, which
// create nothing. It is one rule for every command, failing closed.
func readOnly(cluster string) func(*rest.Config) *rest.Config {
	return func(cfg *rest.Config) *rest.Config {
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return &readOnlyTransport{cluster: cluster, next: rt}
		})
		return cfg
	}
}

type readOnlyTransport struct {
	cluster string
	next    http.RoundTripper
}

func (t *readOnlyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !readRequest(req.Method, req.URL.Path) {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, &WriteRefusedError{Cluster: t.cluster, Method: req.Method, Path: req.URL.Path}
	}
	return t.next.RoundTrip(req)
}

// reviews are the kinds a POST creates nothing with: the server answers
// about the caller.
var reviews = []string{"/selfsubjectreviews", "/selfsubjectaccessreviews", "/selfsubjectrulesreviews"}

// readRequest reports whether a request only reads.
func readRequest(method, path string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return true
	case http.MethodPost:
		for _, r := range reviews {
			if strings.HasPrefix(path, "/apis/") && strings.HasSuffix(path, r) && strings.Count(path, "/") == 4 {
				return true // /apis/<group>/<version>/<review>: cluster-scoped, no subresource
			}
		}
	}
	return false
}
