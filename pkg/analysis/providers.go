package analysis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/subst"
)

// maxAnswer bounds a web provider's answer.
const maxAnswer = 1 << 20

// Env is where credentials are read: os.Getenv, or a test's map.
type Env func(name string) string

// ProviderOf is a's provider for one cluster: its address, query and
// headers expanded with vars (the cluster's substitution variables),
// its credentials read from env or their file (relative to dir).
func ProviderOf(a fleet.Analysis, vars map[string]string, dir string, env Env, transport http.RoundTripper) (Provider, error) {
	switch {
	case a.Prometheus != nil:
		m := a.Prometheus
		address, err := expand("prometheus.address", m.Address, vars)
		if err != nil {
			return nil, err
		}
		query, err := expandQuery("prometheus.query", m.Query, vars)
		if err != nil {
			return nil, err
		}
		rt, err := requestOf("prometheus", address, m.Headers, m.Auth, vars, dir, env, transport)
		if err != nil {
			return nil, err
		}
		client, err := api.NewClient(api.Config{Address: address, RoundTripper: rt})
		if err != nil {
			return nil, fmt.Errorf("prometheus.address: %w", err)
		}
		return &prometheus{api: promv1.NewAPI(client), address: address, query: query, timeout: timeoutOf(m.Timeout)}, nil
	case a.Web != nil:
		m := a.Web
		u, err := expand("web.url", m.URL, vars)
		if err != nil {
			return nil, err
		}
		rt, err := requestOf("web", u, m.Headers, m.Auth, vars, dir, env, transport)
		if err != nil {
			return nil, err
		}
		return &web{client: &http.Client{Transport: rt}, url: u, timeout: timeoutOf(m.Timeout)}, nil
	}
	return nil, errors.New("no provider: prometheus or web")
}

// unquoted are what a value put in a query may not hold: a quote, a
// backslash, a brace, a parenthesis or a line break could end a label
// matcher and change what the query asks (an attribute read from a
// cluster, written there by someone else, making a bad canary pass).
const unquoted = "\"'`\\{}()\n\r"

// expandQuery is expand for a query: a variable it names whose value
// holds any of unquoted is refused, and its value not printed.
func expandQuery(field, text string, vars map[string]string) (string, error) {
	for _, name := range subst.Names(text) {
		if strings.ContainsAny(vars[name], unquoted) {
			return "", fmt.Errorf("%s: the value of ${%s} holds a quote, backslash, brace, parenthesis or line break, which could change what the query asks; it is not put in a query", field, name)
		}
	}
	return expand(field, text, vars)
}

func expand(field, text string, vars map[string]string) (string, error) {
	out, err := subst.Substitute(text, vars)
	if err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	return out, nil
}

func timeoutOf(d time.Duration) time.Duration {
	if d <= 0 {
		return fleet.DefaultAnalysisTimeout
	}
	return d
}

// requestOf is the transport of a provider's requests to address: its
// headers expanded, and its credentials read once, here, and added to
// each request to address's host alone (a redirect elsewhere gets none),
// never printed: errors name where they were looked for.
func requestOf(provider, address string, headers map[string]string, auth *fleet.MetricAuth, vars map[string]string, dir string, env Env, next http.RoundTripper) (http.RoundTripper, error) {
	if next == nil {
		next = http.DefaultTransport
	}
	u, err := url.Parse(address)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", provider, err)
	}
	h := http.Header{}
	for k, v := range headers {
		v, err := expand(provider+".headers["+k+"]", v, vars)
		if err != nil {
			return nil, err
		}
		h.Set(k, v)
	}
	if auth != nil {
		cred, err := credential(provider+".auth", auth, dir, env)
		if err != nil {
			return nil, err
		}
		h.Set("Authorization", cred)
	}
	return headerTransport{host: u.Host, header: h, next: next}, nil
}

// credential is the Authorization header auth says where to find.
func credential(field string, auth *fleet.MetricAuth, dir string, env Env) (string, error) {
	need := func(name string) (string, error) {
		v := env(name)
		if v == "" {
			return "", fmt.Errorf("%s: the environment variable %s is not set", field, name)
		}
		return v, nil
	}
	switch {
	case auth.BearerTokenEnv != "":
		token, err := need(auth.BearerTokenEnv)
		return "Bearer " + strings.TrimSpace(token), err
	case auth.BearerTokenFile != "":
		path := auth.BearerTokenFile
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("%s.bearerTokenFile: %w", field, err)
		}
		return "Bearer " + strings.TrimSpace(string(b)), nil
	default:
		user, err := need(auth.UsernameEnv)
		if err != nil {
			return "", err
		}
		password, err := need(auth.PasswordEnv)
		if err != nil {
			return "", err
		}
		r := http.Request{Header: http.Header{}}
		r.SetBasicAuth(user, password)
		return r.Header.Get("Authorization"), nil
	}
}

// headerTransport adds its headers to every request to host.
type headerTransport struct {
	host   string
	header http.Header
	next   http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host == t.host {
		r = r.Clone(r.Context())
		maps.Copy(r.Header, t.header)
	}
	return t.next.RoundTrip(r)
}

// prometheus is an instant query to a Prometheus-compatible API.
type prometheus struct {
	api            promv1.API
	address, query string
	timeout        time.Duration
}

func (p *prometheus) Measure(ctx context.Context) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	v, _, err := p.api.Query(ctx, p.query, time.Now(), promv1.WithTimeout(p.timeout))
	if err != nil {
		return nil, p.explain(ctx, err)
	}
	switch v := v.(type) {
	case *model.Scalar:
		return float64(v.Value), nil
	case model.Vector:
		switch len(v) {
		case 0:
			return nil, nil
		case 1:
			return float64(v[0].Value), nil
		}
		out := make([]float64, len(v))
		for i, s := range v {
			out[i] = float64(s.Value)
		}
		return out, nil
	case model.Matrix:
		return nil, Refused(errors.New("the query returns a range vector: ask for an instant value, such as sum(rate(x[2m]))"))
	}
	return nil, Refused(fmt.Errorf("the query returns a %s, not a number", v.Type()))
}

// Check asks the provider whether its query is one it takes, without
// measuring: a Prometheus parses it (/api/v1/format_query); a web
// provider has nothing to check. vet --server asks it.
func Check(ctx context.Context, p Provider) error {
	prom, ok := p.(*prometheus)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, prom.timeout)
	defer cancel()
	if _, err := prom.api.FormatQuery(ctx, prom.query); err != nil {
		return prom.explain(ctx, err)
	}
	return nil
}

// explain says a query's error plainly: refused (bad PromQL, a client
// error but 408 and 429) or not (down, a server error, too slow).
func (p *prometheus) explain(ctx context.Context, err error) error {
	var apiErr *promv1.Error
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("prometheus %s: no answer in %s", p.address, p.timeout)
	case errors.As(err, &apiErr) && apiErr.Type == promv1.ErrBadData:
		return Refused(fmt.Errorf("prometheus %s refused the query: %s", p.address, apiErr.Msg))
	case errors.As(err, &apiErr) && apiErr.Type == promv1.ErrClient && !strings.Contains(apiErr.Msg, "408") && !strings.Contains(apiErr.Msg, "429"):
		return Refused(fmt.Errorf("prometheus %s: %s", p.address, apiErr.Msg))
	case errors.As(err, &apiErr):
		return fmt.Errorf("prometheus %s: %s", p.address, apiErr.Msg)
	}
	return fmt.Errorf("prometheus %s: %v", p.address, unwrapURL(err))
}

// web is a GET of a URL whose JSON answer is the result.
type web struct {
	client  *http.Client
	url     string
	timeout time.Duration
}

func (w *web) Measure(ctx context.Context) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.url, nil)
	if err != nil {
		return nil, Refused(fmt.Errorf("web %s: %w", w.url, err))
	}
	req.Header.Set("Accept", "application/json")
	resp, err := w.client.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("web %s: no answer in %s", w.url, w.timeout)
		}
		return nil, fmt.Errorf("web %s: %v", w.url, unwrapURL(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("web %s: %w", w.url, err)
	case resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return nil, fmt.Errorf("web %s: %s", w.url, resp.Status)
	case resp.StatusCode >= 300:
		return nil, Refused(fmt.Errorf("web %s: %s", w.url, resp.Status))
	case len(body) > maxAnswer:
		return nil, Refused(fmt.Errorf("web %s: the answer is over %d bytes", w.url, maxAnswer))
	case len(strings.TrimSpace(string(body))) == 0:
		return nil, nil
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, fmt.Errorf("web %s: the answer is not JSON: %v", w.url, err)
	}
	return v, nil
}

// unwrapURL is a transport error without the method and URL *url.Error
// puts before it (the caller names the address once).
func unwrapURL(err error) error {
	var u *url.Error
	if errors.As(err, &u) {
		return u.Err
	}
	return err
}
