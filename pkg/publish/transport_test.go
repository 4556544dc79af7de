package publish_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
)

// recorder records the URLs it is asked for and answers none (a
// registry whose HTTPS fails, so that go-containerregistry tries its
// plain HTTP fallback).
type recorder struct {
	mu   sync.Mutex
	urls []string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.urls = append(r.urls, req.URL.String())
	r.mu.Unlock()
	return nil, errors.New("no TLS here")
}

// A registry on a private address, a .local name or a name under
// localhost is reached over HTTPS only unless the delivery says
// insecure: true: go-containerregistry's fallback to plain HTTP (with
// Basic credentials) is refused before it leaves. A loopback address
// may be plain: it never leaves the machine.
func TestTLSUnlessInsecure(t *testing.T) {
	for _, tc := range []struct {
		host      string
		insecure  bool
		wantPlain bool
	}{
		{"10.0.0.7:5000", false, false},
		{"192.168.1.20:5000", false, false},
		{"registry.local:5000", false, false},
		{"evil.localhost:5000", false, false},
		{"registry.example.com", false, false},
		{"10.0.0.7:5000", true, true},
		{"127.0.0.1:5000", false, true},
		{"localhost:5000", false, true},
	} {
		t.Run(tc.host, func(t *testing.T) {
			r, err := publish.ParseRegistry("oci://"+tc.host+"/fleets/prod", tc.insecure)
			if err != nil {
				t.Fatal(err)
			}
			rec := &recorder{}
			r.Transport, r.Keychain = rec, authn.NewMultiKeychain()
			_, _, err = r.Resolve(context.Background(), "web", "edge-1")
			if err == nil {
				t.Fatal("resolved through a transport that answers nothing")
			}
			plain := false
			for _, u := range rec.urls {
				plain = plain || strings.HasPrefix(u, "http://")
			}
			if plain != tc.wantPlain {
				t.Errorf("plain HTTP sent: %v, want %v (%v; %v)", plain, tc.wantPlain, rec.urls, err)
			}
			if tc.host == "10.0.0.7:5000" && !tc.insecure && !strings.Contains(err.Error(), "refusing plain HTTP to "+tc.host) {
				t.Errorf("error %v does not say plain HTTP was refused", err)
			}
		})
	}
}
