package fleet

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/condition"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/subst"
)

// Analysis is a metric measured on each cluster of a group or batch
// while it soaks, modelled on Argo Rollouts' AnalysisTemplate metrics: a
// query to one provider (Prometheus or web), conditions over its
// result, how often, how many times and how many bad measurements it
// tolerates. ${attribute} in the query, address, URL and headers is the
// cluster's, so one analysis serves every cluster.
type Analysis struct {
	// Name names the analysis in output, unique in its group and batch.
	Name string `yaml:"name" jsonschema:"required"`
	// Prometheus queries a Prometheus-compatible API (Prometheus, Thanos,
	// Mimir, VictoriaMetrics): an instant query, its result a number (one
	// sample) or a list (several).
	Prometheus *PrometheusMetric `yaml:"prometheus"`
	// Web reads a URL whose JSON answer is the result.
	Web *WebMetric `yaml:"web"`
	// SuccessCondition is CEL over result; a measurement where it is
	// false failed (unless FailureCondition is set too: then it is
	// inconclusive).
	SuccessCondition string `yaml:"successCondition"`
	// FailureCondition is CEL over result; a measurement where it is
	// true failed.
	FailureCondition string `yaml:"failureCondition"`
	// Interval is the time between two measurements; default 30s.
	Interval time.Duration `yaml:"interval"`
	// InitialDelay is how long after the soak starts the first
	// measurement is taken.
	InitialDelay time.Duration `yaml:"initialDelay"`
	// Count is how many measurements are taken; 0: one every Interval
	// for the whole soak.
	Count int `yaml:"count"`
	// FailureLimit is how many failed measurements the analysis
	// tolerates; one more fails the cluster.
	FailureLimit int `yaml:"failureLimit"`
	// InconclusiveLimit is how many measurements without data (an empty
	// answer, NaN, neither condition) it tolerates; one more fails the
	// cluster. No data never passes.
	InconclusiveLimit int `yaml:"inconclusiveLimit"`
}

// DefaultAnalysisInterval is the time between two measurements of an
// analysis without an interval.
const DefaultAnalysisInterval = 30 * time.Second

// DefaultAnalysisTimeout bounds one measurement's request.
const DefaultAnalysisTimeout = 10 * time.Second

// PrometheusMetric is an instant query to a Prometheus-compatible API.
type PrometheusMetric struct {
	// Address is the API's base URL (http://prometheus.monitoring:9090),
	// the same for the fleet or an attribute per cluster (${prometheus}).
	Address string `yaml:"address" jsonschema:"required"`
	// Query is PromQL.
	Query string `yaml:"query" jsonschema:"required"`
	// Timeout bounds one query; default 10s.
	Timeout time.Duration `yaml:"timeout"`
	// Headers are sent with each query (Mimir's X-Scope-OrgID); no
	// credentials here: Auth reads those.
	Headers map[string]string `yaml:"headers"`
	// Auth is where the query's credentials are read from.
	Auth *MetricAuth `yaml:"auth"`
}

// WebMetric is a GET of a URL that answers JSON.
type WebMetric struct {
	// URL is read with GET; its JSON answer is result.
	URL string `yaml:"url" jsonschema:"required"`
	// Timeout bounds one request; default 10s.
	Timeout time.Duration `yaml:"timeout"`
	// Headers are sent with each request; no credentials here.
	Headers map[string]string `yaml:"headers"`
	// Auth is where the request's credentials are read from.
	Auth *MetricAuth `yaml:"auth"`
}

// MetricAuth names where a provider's credentials are, never the
// credentials: a bearer token in an environment variable or a file, or a
// user name and password in two environment variables.
type MetricAuth struct {
	// BearerTokenEnv is the variable holding a bearer token.
	BearerTokenEnv string `yaml:"bearerTokenEnv"`
	// BearerTokenFile is a file holding a bearer token, as a
	// kubeconfig's tokenFile (relative to the fleet file's folder).
	BearerTokenFile string `yaml:"bearerTokenFile"`
	// UsernameEnv and PasswordEnv hold basic auth's user and password.
	UsernameEnv string `yaml:"usernameEnv"`
	PasswordEnv string `yaml:"passwordEnv"`
}

// AnalysesOf are the analyses of a wave of group g: the group's, then
// those of its batch (batch "" or the group's only wave: the group's
// alone).
func (g *Group) AnalysesOf(batch string) []Analysis {
	out := g.Analysis
	for i, b := range g.Batches {
		if batchName(b, i) == batch && len(b.Analysis) > 0 {
			out = append(out[:len(out):len(out)], b.Analysis...)
		}
	}
	return out
}

// Analyses are every analysis of the group: its own, then its batches'.
func (g *Group) Analyses() []Analysis {
	out := g.Analysis[:len(g.Analysis):len(g.Analysis)]
	for _, b := range g.Batches {
		out = append(out, b.Analysis...)
	}
	return out
}

// Auth is where the analysis's provider reads its credentials; nil for
// none.
func (a Analysis) Auth() *MetricAuth {
	switch {
	case a.Prometheus != nil:
		return a.Prometheus.Auth
	case a.Web != nil:
		return a.Web.Auth
	}
	return nil
}

// validateOnFailure checks an onFailure: hold or rollback.
func validateOnFailure(e *errs, field, v string) {
	if v != "" && v != OnFailureHold && v != OnFailureRollback {
		e.add(field, "%q is not hold or rollback", v)
	}
}

// validateAnalyses checks the analyses of group g (at p: "groups[1]"),
// the group's and each batch's: one provider each, conditions that
// compile, limits not negative, a count or a soak to measure during, and
// every ${attribute} defined for each of the group's clusters.
func (f *Fleet) validateAnalyses(e *errs, p string, g Group) {
	if len(g.Analyses()) == 0 {
		return
	}
	clusters := f.substitutionsOf(&g) // once for all of them
	names := map[string]bool{}
	f.validateAnalysisList(e, p+".analysis", g.Analysis, g.Soak, clusters, names)
	for i, b := range g.Batches {
		soak := g.Soak
		if i < len(g.Batches)-1 {
			soak = cmp.Or(g.BatchSoak, g.Soak)
		}
		f.validateAnalysisList(e, fmt.Sprintf("%s.batches[%d].analysis", p, i), b.Analysis, soak, clusters, maps.Clone(names))
	}
}

func (f *Fleet) validateAnalysisList(e *errs, p string, list []Analysis, soak time.Duration, clusters []substitutions, names map[string]bool) {
	for i, a := range list {
		ap := fmt.Sprintf("%s[%d]", p, i)
		validateName(e, ap+".name", a.Name)
		if names[a.Name] && a.Name != "" {
			e.add(ap+".name", "duplicate analysis name %q (a batch's analyses run beside its group's)", a.Name)
		}
		names[a.Name] = true
		switch {
		case a.Prometheus == nil && a.Web == nil:
			e.add(ap, "give a provider: prometheus {address, query} or web {url}")
		case a.Prometheus != nil && a.Web != nil:
			e.add(ap, "give one provider: prometheus or web, not both")
		case a.Prometheus != nil:
			m := a.Prometheus
			requireText(e, ap+".prometheus.address", m.Address, "the API's base URL, such as http://prometheus.monitoring:9090 or ${prometheus}")
			requireText(e, ap+".prometheus.query", m.Query, "PromQL, such as sum(rate(http_requests_total{code=~\"5..\"}[2m]))")
			f.validateRequest(e, ap+".prometheus", m.Address, m.Timeout, m.Headers, m.Auth, clusters, "address", m.Query)
		default:
			m := a.Web
			requireText(e, ap+".web.url", m.URL, "the URL to GET, its answer JSON")
			f.validateRequest(e, ap+".web", m.URL, m.Timeout, m.Headers, m.Auth, clusters, "url", "")
		}
		if a.SuccessCondition == "" && a.FailureCondition == "" {
			e.add(ap+".successCondition", "required (or failureCondition): CEL over result, such as result < 0.01")
		}
		for field, text := range map[string]string{"successCondition": a.SuccessCondition, "failureCondition": a.FailureCondition} {
			if text == "" {
				continue
			}
			if _, err := condition.Compile(text); err != nil {
				e.add(ap+"."+field, "%v", err)
			}
		}
		for field, d := range map[string]time.Duration{"interval": a.Interval, "initialDelay": a.InitialDelay} {
			if d < 0 {
				e.add(ap+"."+field, "must not be negative, got %s", d)
			}
		}
		for field, n := range map[string]int{"count": a.Count, "failureLimit": a.FailureLimit, "inconclusiveLimit": a.InconclusiveLimit} {
			if n < 0 {
				e.add(ap+"."+field, "must not be negative, got %d", n)
			}
		}
		if a.Count == 0 && soak <= 0 {
			e.add(ap+".count", "required without a soak: how many measurements to take (or give the group a soak to measure during)")
		}
	}
}

// validateRequest checks a provider's request: its address's
// ${attributes} (and the query's and headers') defined for every cluster,
// the address an http(s) URL without credentials and none read from the
// cluster, no credential among the headers, and where auth reads them.
func (f *Fleet) validateRequest(e *errs, p, address string, timeout time.Duration, headers map[string]string, auth *MetricAuth, clusters []substitutions, addressField, query string) {
	if timeout < 0 {
		e.add(p+".timeout", "must not be negative, got %s", timeout)
	}
	for _, k := range slices.Sorted(maps.Keys(headers)) {
		if strings.EqualFold(k, "Authorization") || strings.EqualFold(k, "Proxy-Authorization") {
			e.add(p+".headers", "%s is a credential: say where it is with auth (bearerTokenEnv, bearerTokenFile, usernameEnv and passwordEnv), never in the fleet file", k)
		}
	}
	texts := map[string]string{addressField: address, "query": query}
	for _, k := range slices.Sorted(maps.Keys(headers)) {
		texts["headers["+k+"]"] = headers[k]
	}
	for _, field := range slices.Sorted(maps.Keys(texts)) {
		text, over := texts[field], clusters
		if !strings.Contains(text, "${") && len(over) > 1 {
			over = over[:1] // the same text for every cluster
		}
		for _, c := range over {
			if msg := c.check(text, field == addressField); msg != "" {
				e.add(p+"."+field, "%s", msg) // the first cluster's, once
				break
			}
		}
	}
	if len(clusters) == 0 && !strings.Contains(address, "${") {
		if err := httpURL(address); err != nil {
			e.add(p+"."+addressField, "%v", err)
		}
	}
	validateAuth(e, p+".auth", auth)
}

// httpURL refuses what is not an http(s) URL with a host, or one that
// carries a user or password.
func httpURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Errorf("not a URL: %v", err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%q is not an http:// or https:// URL", s)
	case u.Host == "":
		return fmt.Errorf("%q has no host", s)
	case u.User != nil:
		return errors.New("a URL with a user or password puts a credential in the fleet file: say where it is with auth (usernameEnv and passwordEnv)")
	}
	return nil
}

func validateAuth(e *errs, p string, a *MetricAuth) {
	if a == nil {
		return
	}
	ways := 0
	for _, set := range []bool{a.BearerTokenEnv != "", a.BearerTokenFile != "", a.UsernameEnv != "" || a.PasswordEnv != ""} {
		if set {
			ways++
		}
	}
	switch {
	case ways == 0:
		e.add(p, "say where the credentials are: bearerTokenEnv, bearerTokenFile, or usernameEnv and passwordEnv")
	case ways > 1:
		e.add(p, "give one way: bearerTokenEnv, bearerTokenFile, or usernameEnv and passwordEnv")
	case (a.UsernameEnv == "") != (a.PasswordEnv == ""):
		e.add(p, "basic auth needs both usernameEnv and passwordEnv")
	}
	for field, name := range map[string]string{"bearerTokenEnv": a.BearerTokenEnv, "usernameEnv": a.UsernameEnv, "passwordEnv": a.PasswordEnv} {
		if name != "" && !envName.MatchString(name) {
			e.add(p+"."+field, "%q is not an environment variable name such as PROMETHEUS_TOKEN", name)
		}
	}
}

func requireText(e *errs, field, text, what string) {
	if strings.TrimSpace(text) == "" {
		e.add(field, "required: %s", what)
	}
}

// substitutions are the variables one cluster's analyses are expanded
// with, as far as the file knows them: its attributes' text (scalars as
// written, others as JSON), the FLEET_ names, and those read from the
// cluster (attributesFrom, read) with no value yet.
type substitutions struct {
	cluster string
	vars    map[string]string
	read    []string
}

// substitutionsOf are the substitutions of each cluster of g.
func (f *Fleet) substitutionsOf(g *Group) []substitutions {
	clusters := f.groupClusters(g)
	out := make([]substitutions, len(clusters))
	for i, c := range clusters {
		s := substitutions{cluster: c.Name, vars: map[string]string{}}
		for k, v := range f.Attributes(c) {
			s.vars[k] = subst.Text(v)
		}
		for _, from := range f.AttributesFrom(c) {
			for k := range from.Attributes {
				s.vars[k], s.read = "", append(s.read, k)
			}
		}
		s.vars["FLEET_CLUSTER_NAME"], s.vars["FLEET_CLUSTER_GROUP"], s.vars["FLEET_CLUSTER_CONTEXT"], s.vars["FLEET_NAME"] = c.Name, c.Group, c.Context, f.Metadata.Name
		out[i] = s
	}
	return out
}

// check expands text for the cluster and says what is wrong ("" for
// nothing): a variable it does not define; for an address, one read
// from the cluster (only then is the expansion the one a run sees), or
// what is not an http(s) URL.
func (s substitutions) check(text string, address bool) string {
	out, err := subst.Substitute(text, s.vars)
	switch {
	case err != nil:
		return fmt.Sprintf("cluster %s: %v", s.cluster, err)
	case address && slices.ContainsFunc(subst.Names(text), func(n string) bool { return slices.Contains(s.read, n) }):
		return "names an attribute read from the cluster (attributesFrom): whoever writes that object there could send the query, and its credentials, elsewhere; give the address in the fleet file"
	case address:
		if err := httpURL(out); err != nil {
			return fmt.Sprintf("cluster %s: %v", s.cluster, err)
		}
	}
	return ""
}
