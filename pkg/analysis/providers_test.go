package analysis

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
)

const secret = "s3cr3t-token"

// promServer answers /api/v1/query as Prometheus does: answer is the
// JSON "data", or status an HTTP error with Prometheus's error body.
func promServer(t *testing.T, status int, answer string) (*httptest.Server, *http.Request) {
	t.Helper()
	var seen http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		seen = *r.Clone(context.Background())
		w.Header().Set("Content-Type", "application/json")
		switch status {
		case http.StatusOK:
			fmt.Fprintf(w, `{"status":"success","data":%s}`, answer)
		case http.StatusBadRequest:
			w.WriteHeader(status)
			fmt.Fprint(w, `{"status":"error","errorType":"bad_data","error":"1:5: parse error: unexpected end of input"}`)
		default:
			w.WriteHeader(status)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

func TestPrometheus(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		answer  string
		want    any
		wantErr string
		refused bool
	}{
		{"one sample", 200, `{"resultType":"vector","result":[{"metric":{},"value":[1,"0.0042"]}]}`, 0.0042, "", false},
		{"several", 200, `{"resultType":"vector","result":[{"metric":{"a":"1"},"value":[1,"1"]},{"metric":{"a":"2"},"value":[1,"2"]}]}`, []float64{1, 2}, "", false},
		{"no data", 200, `{"resultType":"vector","result":[]}`, nil, "", false},
		{"scalar", 200, `{"resultType":"scalar","result":[1,"7"]}`, 7.0, "", false},
		{"range vector", 200, `{"resultType":"matrix","result":[]}`, nil, "the query returns a range vector", true},
		{"bad query", 400, "", nil, "refused the query: 1:5: parse error", true},
		{"unauthorized", 401, "", nil, "client error: 401", true},
		{"server error", 503, "", nil, "server error: 503", false},
		{"rate limited", 429, "", nil, "client error: 429", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, seen := promServer(t, tt.status, tt.answer)
			spec := fleet.Analysis{Prometheus: &fleet.PrometheusMetric{
				Address: "${prometheus}", Query: `sum(rate(x{cluster="${FLEET_CLUSTER_NAME}"}[2m]))`,
				Headers: map[string]string{"X-Scope-OrgID": "${tenant}"}, Auth: &fleet.MetricAuth{BearerTokenEnv: "PROM_TOKEN"},
			}}
			env := func(name string) string { return map[string]string{"PROM_TOKEN": secret}[name] }
			p, err := ProviderOf(spec, map[string]string{"prometheus": srv.URL, "FLEET_CLUSTER_NAME": "prod-eu", "tenant": "acme"}, "", env, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Measure(context.Background())
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				if refused := errors.As(err, new(refused)); refused != tt.refused {
					t.Errorf("refused %v, want %v", refused, tt.refused)
				}
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the token is in the error: %v", err)
				}
			case err != nil:
				t.Fatal(err)
			case fmt.Sprint(got) != fmt.Sprint(tt.want):
				t.Errorf("got %v, want %v", got, tt.want)
			}
			if q := seen.Form.Get("query"); q != `sum(rate(x{cluster="prod-eu"}[2m]))` {
				t.Errorf("query %q", q)
			}
			if seen.Header.Get("Authorization") != "Bearer "+secret || seen.Header.Get("X-Scope-OrgID") != "acme" {
				t.Errorf("headers %v", seen.Header)
			}
		})
	}
}

// A Prometheus that does not answer is bounded by the timeout.
func TestPrometheusTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	p, err := ProviderOf(fleet.Analysis{Prometheus: &fleet.PrometheusMetric{Address: srv.URL, Query: "up", Timeout: 50 * time.Millisecond}}, nil, "", os.Getenv, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = p.Measure(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no answer in 50ms") || errors.As(err, new(refused)) {
		t.Fatalf("error %v, want no answer in 50ms, not refused", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s", d)
	}
}

func TestWeb(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		body    string
		want    string
		wantErr string
		refused bool
	}{
		{"json", 200, `{"p99": 0.21, "ok": true}`, "map[ok:true p99:0.21]", "", false},
		{"empty", 200, ``, "<nil>", "", false},
		{"not json", 200, `<html>`, "", "the answer is not JSON", false},
		{"not found", 404, ``, "", "404 Not Found", true},
		{"server error", 502, ``, "", "502 Bad Gateway", false},
		{"too large", 200, `"` + strings.Repeat("x", maxAnswer) + `"`, "", "the answer is over", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var auth string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				auth = r.Header.Get("Authorization")
				w.WriteHeader(tt.status)
				fmt.Fprint(w, tt.body)
			}))
			defer srv.Close()
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "token"), []byte(secret+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			p, err := ProviderOf(fleet.Analysis{Web: &fleet.WebMetric{URL: srv.URL + "/slo/${FLEET_CLUSTER_NAME}", Auth: &fleet.MetricAuth{BearerTokenFile: "token"}}}, map[string]string{"FLEET_CLUSTER_NAME": "eu"}, dir, os.Getenv, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Measure(context.Background())
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || errors.As(err, new(refused)) != tt.refused {
					t.Fatalf("error %v (refused %v), want %q (refused %v)", err, errors.As(err, new(refused)), tt.wantErr, tt.refused)
				}
			case err != nil:
				t.Fatal(err)
			case fmt.Sprint(got) != tt.want:
				t.Errorf("got %v, want %s", got, tt.want)
			}
			if auth != "Bearer "+secret {
				t.Errorf("Authorization %q", auth)
			}
		})
	}
}

// Credentials not where auth says are said by where they were looked
// for, and no request is made.
func TestCredentials(t *testing.T) {
	env := func(name string) string { return map[string]string{"USER": "ops", "EMPTY": ""}[name] }
	tests := []struct {
		auth    fleet.MetricAuth
		wantErr string
	}{
		{fleet.MetricAuth{BearerTokenEnv: "NOPE"}, "prometheus.auth: the environment variable NOPE is not set"},
		{fleet.MetricAuth{UsernameEnv: "USER", PasswordEnv: "EMPTY"}, "prometheus.auth: the environment variable EMPTY is not set"},
		{fleet.MetricAuth{BearerTokenFile: "missing"}, "prometheus.auth.bearerTokenFile: open"},
	}
	for _, tt := range tests {
		_, err := ProviderOf(fleet.Analysis{Prometheus: &fleet.PrometheusMetric{Address: "http://p:9090", Query: "up", Auth: &tt.auth}}, nil, t.TempDir(), env, nil)
		if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
			t.Errorf("%+v: error %v, want %q", tt.auth, err, tt.wantErr)
		}
	}
	// Basic auth is sent as such.
	var user, password string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, password, _ = r.BasicAuth()
		fmt.Fprint(w, `1`)
	}))
	defer srv.Close()
	env = func(name string) string { return map[string]string{"U": "ops", "P": secret}[name] }
	p, err := ProviderOf(fleet.Analysis{Web: &fleet.WebMetric{URL: srv.URL, Auth: &fleet.MetricAuth{UsernameEnv: "U", PasswordEnv: "P"}}}, nil, "", env, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Measure(context.Background()); err != nil || user != "ops" || password != secret {
		t.Errorf("basic auth %q %q, error %v", user, password, err)
	}
}

// A provider that redirects elsewhere does not hand the credentials
// over: they go to the configured host alone.
func TestCredentialsStayHome(t *testing.T) {
	var leaked string
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked = r.Header.Get("Authorization")
		fmt.Fprint(w, `{"ok": true}`)
	}))
	defer elsewhere.Close()
	home := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+secret {
			t.Errorf("the configured host got %q", r.Header.Get("Authorization"))
		}
		http.Redirect(w, r, elsewhere.URL+"/stolen", http.StatusFound)
	}))
	defer home.Close()
	env := func(string) string { return secret }
	p, err := ProviderOf(fleet.Analysis{Web: &fleet.WebMetric{URL: home.URL, Auth: &fleet.MetricAuth{BearerTokenEnv: "T"}}}, nil, "", env, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Measure(context.Background()); err != nil {
		t.Fatal(err)
	}
	if leaked != "" {
		t.Errorf("a redirect to another host got the credentials: %q", leaked)
	}
}

// A value that could change what a query asks (an attribute read from a
// cluster that ends the label matcher) is not put in it, and not said.
func TestQueryRefusesWhatChangesIt(t *testing.T) {
	spec := fleet.Analysis{Prometheus: &fleet.PrometheusMetric{Address: "http://p:9090", Query: `sum(rate(x{region="${region}"}[2m]))`}}
	for _, tt := range []struct {
		region  string
		wantErr bool
	}{
		{"eu-west-1", false},
		{`eu"} or vector(0) #`, true},
		{"eu\n", true},
		{`eu\`, true},
	} {
		_, err := ProviderOf(spec, map[string]string{"region": tt.region, "other": `"}`}, "", os.Getenv, nil)
		switch {
		case tt.wantErr && (err == nil || !strings.Contains(err.Error(), "the value of ${region} holds a quote")):
			t.Errorf("%q: error %v", tt.region, err)
		case tt.wantErr && strings.Contains(err.Error(), tt.region):
			t.Errorf("%q: the value is in the error: %v", tt.region, err)
		case !tt.wantErr && err != nil:
			t.Errorf("%q: %v", tt.region, err)
		}
	}
}

// Check asks a Prometheus to parse the query, without measuring; a web
// provider has nothing to check.
func TestCheck(t *testing.T) {
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		paths = append(paths, r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.Form.Get("query"), "(") {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"status":"error","errorType":"bad_data","error":"1:5: parse error: unclosed left parenthesis"}`)
			return
		}
		fmt.Fprint(w, `{"status":"success","data":"up"}`)
	}))
	defer srv.Close()
	for query, wantErr := range map[string]string{"up": "", "sum(": "refused the query: 1:5: parse error: unclosed left parenthesis"} {
		p, err := ProviderOf(fleet.Analysis{Prometheus: &fleet.PrometheusMetric{Address: srv.URL, Query: query}}, nil, "", os.Getenv, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = Check(context.Background(), p)
		if (wantErr == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%q: error %v, want %q", query, err, wantErr)
		}
	}
	for _, p := range paths {
		if p != "/api/v1/format_query" {
			t.Errorf("asked %s, want /api/v1/format_query alone", p)
		}
	}
	w, err := ProviderOf(fleet.Analysis{Web: &fleet.WebMetric{URL: srv.URL}}, nil, "", os.Getenv, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(context.Background(), w); err != nil || len(paths) != 2 {
		t.Errorf("web: %v, %d requests in all", err, len(paths))
	}
}
