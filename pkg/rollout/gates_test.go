package rollout

import (
	"context"
	"errors"
	"fmt"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/analysis"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
)

// events records what a sink is given.
type events struct {
	mu  sync.Mutex
	got []string
}

func (e *events) sink(ev Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, ev.Where()+" "+ev.Text())
}

func (e *events) lines() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.got)
}

// A soak over two clusters: one stays healthy and passes; on the other an
// object goes away on the third look, which fails it, says so, and hands
// it to Ended (a rollback would go there).
func TestSoak(t *testing.T) {
	var (
		mu    sync.Mutex
		looks = map[string]int{}
		gates = map[string]*gateSet{"eu": {}, "us": {}}
		ended = map[string]error{}
		ev    events
	)
	s := soakRun{
		Duration: 300 * time.Millisecond, Interval: 20 * time.Millisecond,
		Health: func(_ context.Context, cluster string) error {
			mu.Lock()
			defer mu.Unlock()
			looks[cluster]++
			if cluster == "us" && looks[cluster] >= 3 {
				return errors.New("configmap/a is gone")
			}
			return nil
		},
		Gates: func(c string) *gateSet { return gates[c] },
		Emit:  ev.sink,
		Ended: func(_ context.Context, cluster string, err error) error {
			mu.Lock()
			defer mu.Unlock()
			ended[cluster] = err
			if err != nil {
				return fmt.Errorf("%w; rolled back", err)
			}
			return nil
		},
	}
	errs := s.Run(context.Background(), []string{"eu", "us"})
	if len(errs) != 1 || errs["us"] == nil || errs["us"].Error() != "soak: configmap/a is gone; rolled back" {
		t.Fatalf("errors %v", errs)
	}
	if _, ok := ended["eu"]; !ok || ended["eu"] != nil || ended["us"] == nil {
		t.Errorf("ended %v", ended)
	}
	if looks["eu"] < 10 {
		t.Errorf("eu was looked at %d times in 300ms every 20ms", looks["eu"])
	}
	lines := ev.lines()
	for _, want := range []string{"eu soak started: watching for 0s", "eu soak passed", "us soak failed"} {
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, want) }) {
			t.Errorf("no %q in %q", want, lines)
		}
	}
	gates["eu"].Pass("web", applied)
	gates["us"].Pass("web", applied)
	if v := gates["eu"].Verdict("web"); v.State != revision.Verified || !slices.Contains(v.Gates, "soak 300ms") {
		t.Errorf("eu: %+v", v)
	}
	if v := gates["us"].Verdict("web"); v.State != revision.Failed || v.Reason != "soak: configmap/a is gone" {
		t.Errorf("us: %+v", v)
	}
}

// Ctrl-C during a soak: the cluster is neither passed nor failed, and
// Ended is not called (no rollback of a run the user stopped).
func TestSoakInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var g gateSet
	var ev events
	s := soakRun{
		Duration: time.Minute, Interval: 10 * time.Millisecond,
		Health: func(context.Context, string) error { cancel(); return nil },
		Gates:  func(string) *gateSet { return &g },
		Emit:   ev.sink,
		Ended:  func(context.Context, string, error) error { t.Error("Ended called after Ctrl-C"); return nil },
	}
	errs := s.Run(ctx, []string{"eu"})
	if errs["eu"] == nil || !strings.Contains(errs["eu"].Error(), "soak interrupted") {
		t.Fatalf("errors %v", errs)
	}
	g.Pass("web", applied)
	if v := g.Verdict("web"); slices.ContainsFunc(v.Gates, func(s string) bool { return strings.HasPrefix(s, "soak") }) {
		t.Errorf("an interrupted soak counted as a gate: %+v", v)
	}
}

// Checks run in order from the fleet's folder with the kubeconfig and the
// environment given; the first failure stops them and fails the gates.
func TestChecks(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the checks are shell scripts")
	}
	dir := t.TempDir()
	script := "#!/bin/sh\necho \"$1 $FLEET_CLUSTER_NAME $KUBECONFIG${KUBECONFIG_PROD}${PROD_CREDS}\" >> ran\n[ \"$1\" != bad ]\n"
	t.Setenv("KUBECONFIG_PROD", "/home/me/prod.kubeconfig")
	t.Setenv("PROD_CREDS", "apiVersion: v1\nkind: Config")
	if err := os.WriteFile(filepath.Join(dir, "check.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	var ev events
	var g gateSet
	var out strings.Builder
	c := checkRun{
		Dir: dir, Kubeconfig: "/tmp/one.kubeconfig", Env: []string{"FLEET_CLUSTER_NAME=eu"}, Secret: []string{"PROD_CREDS"}, Out: &out, Emit: ev.sink, Gates: &g,
		Checks: []fleet.Check{
			{Name: "first", Command: []string{"./check.sh", "good"}},
			{Name: "second", Command: []string{"./check.sh", "bad"}},
			{Name: "third", Command: []string{"./check.sh", "never"}},
		},
	}
	err := c.Run(context.Background(), "eu")
	if err == nil || err.Error() != "check second: exit status 1" {
		t.Fatalf("err %v", err)
	}
	ran, _ := os.ReadFile(filepath.Join(dir, "ran"))
	if string(ran) != "good eu /tmp/one.kubeconfig\nbad eu /tmp/one.kubeconfig\n" {
		t.Errorf("ran:\n%s", ran)
	}
	lines := ev.lines()
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "eu check first passed (") || !strings.HasSuffix(lines[1], "): exit status 1") {
		t.Errorf("events %q", lines)
	}
	g.Pass("web", applied)
	if v := g.Verdict("web"); v.State != revision.Failed || v.Reason != "check second: exit status 1" || !slices.Contains(v.Gates, "check first") {
		t.Errorf("verdict %+v", v)
	}
	// A check that outlives its timeout fails.
	c.Checks = []fleet.Check{{Name: "slow", Command: []string{"sleep", "5"}, Timeout: 100 * time.Millisecond}}
	if err := c.Run(context.Background(), "eu"); err == nil || !strings.Contains(err.Error(), "did not finish within 100ms") {
		t.Errorf("slow check: %v", err)
	}
}

// A check gets the machine's environment but what holds a key: the
// fleet's kubeconfigFrom, signing.keyEnv and notify: credentials'
// variables, and the families of SOPS, cosign, Vault and the approver's
// key.
func TestCheckEnvironment(t *testing.T) {
	f, err := fleet.Parse([]byte(`apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: f}
notify:
  - {name: chat, slack: {channel: C1, tokenFrom: {env: SLACK_BOT_TOKEN}}}
  - {name: hook, webhook: {urlFrom: {env: HOOK_URL}, secretFrom: {env: HOOK_SECRET}}}
groups:
  - name: staging
    delivery: {oci: oci://registry.example.com/f, signing: {keyEnv: GROUP_SIGNING_KEY}}
    notify: [{name: commits, github: {repository: acme/shop, tokenFrom: {env: GITHUB_TOKEN}}}]
  - name: production
clusters:
  - {name: stg, group: staging, context: stg}
  - name: prod
    group: production
    context: prod
    kubeconfigFrom: {env: PROD_KUBECONFIG}
  - name: edge
    group: production
    delivery: {oci: oci://registry.example.com/f, signing: {keyEnv: EDGE_SIGNING_KEY}}
`), "fleet.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := checkRun{Secret: credentialEnvs(f)}
	for _, tc := range []struct {
		env  string
		kept bool
	}{
		{"PATH=/usr/bin", true},
		{"HOME=/home/me", true},
		{"AWS_PROFILE=ci", true},
		{"KUBECONFIG=/home/me/.kube/config", false},
		{"KUBECONFIG_PROD=/home/me/prod", false},
		{"PROD_KUBECONFIG=apiVersion: v1", false},
		{"GROUP_SIGNING_KEY=-----BEGIN", false},
		{"EDGE_SIGNING_KEY=-----BEGIN", false},
		{"COSIGN_PASSWORD=hunter2", false},
		{"COSIGN_KEY=cosign.key", false},
		{"SOPS_AGE_KEY=AGE-SECRET-KEY-1", false},
		{"SOPS_AGE_KEY_FILE=/home/me/keys.txt", false},
		{"SOPS_AGE_KEY_CMD=pass age", false},
		{"SOPS_AGE_SSH_PRIVATE_KEY_FILE=/home/me/.ssh/id", false},
		{"VAULT_TOKEN=s.token", false},
		{"KUBECTL_FLEET_APPROVER_KEY=/keys/alice.pem", false},
		{"SLACK_BOT_TOKEN=xoxb-1", false},
		{"HOOK_URL=https://hooks.example.com/T0KEN", false},
		{"HOOK_SECRET=s3cret", false},
		{"GITHUB_TOKEN=ghs_1", false},
	} {
		got := c.inherited([]string{tc.env})
		if kept := len(got) == 1; kept != tc.kept {
			t.Errorf("%s: kept %v, want %v", tc.env, kept, tc.kept)
		}
	}
}

// measuredAs is an analysis provider that answers per cluster.
type measuredAs func() (any, error)

func (m measuredAs) Measure(context.Context) (any, error) { return m() }

// A soak with analyses lasts until they are over, even past its own
// duration (none here: analysis alone), and ends as one fails: the
// cluster fails with the analysis's value and condition; one that
// passed is a gate of the verdict.
func TestSoakAnalysis(t *testing.T) {
	var (
		gates = map[string]*gateSet{"eu": {}, "us": {}}
		ev    events
	)
	spec := fleet.Analysis{Name: "error-rate", SuccessCondition: "result < 0.01", Count: 3, Interval: 30 * time.Millisecond}
	rates := map[string]float64{"eu": 0.001, "us": 0.2}
	s := soakRun{
		Interval: 10 * time.Millisecond,
		Health:   func(context.Context, string) error { return nil },
		Gates:    func(c string) *gateSet { return gates[c] },
		Emit:     ev.sink,
		Analyses: func(cluster string) ([]*analysis.Analysis, error) {
			a, err := analysis.Of(spec, measuredAs(func() (any, error) { return rates[cluster], nil }))
			return []*analysis.Analysis{a}, err
		},
	}
	start := time.Now()
	errs := s.Run(context.Background(), []string{"eu", "us"})
	if len(errs) != 1 || errs["us"] == nil || errs["us"].Error() != "soak: analysis error-rate failed: 0.2: result < 0.01 does not hold (1 of 1 measurements, failureLimit 0)" {
		t.Fatalf("errors %v", errs)
	}
	if d := time.Since(start); d < 60*time.Millisecond {
		t.Errorf("the soak ended after %s, before eu's three measurements 30ms apart", d)
	}
	lines := ev.lines()
	for _, want := range []string{"eu analysis error-rate (1/3): 0.001 successful (result < 0.01)", "eu analysis error-rate (3/3): 0.001 successful", "eu soak passed", "us analysis error-rate (1/3): 0.2 failed (result < 0.01)", "us soak failed"} {
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, want) }) {
			t.Errorf("no %q in %q", want, lines)
		}
	}
	gates["eu"].Pass("web", applied)
	gates["us"].Pass("web", applied)
	if v := gates["eu"].Verdict("web"); v.State != revision.Verified || !slices.Contains(v.Gates, "analysis error-rate") {
		t.Errorf("eu: %+v", v)
	}
	if v := gates["us"].Verdict("web"); v.State != revision.Failed || !strings.Contains(v.Reason, "analysis error-rate failed: 0.2") {
		t.Errorf("us: %+v", v)
	}
	// A cluster whose analyses cannot start (a credential not set) fails.
	s.Analyses = func(string) ([]*analysis.Analysis, error) {
		return nil, errors.New("analysis error-rate: prometheus.auth: the environment variable PROM_TOKEN is not set")
	}
	errs = s.Run(context.Background(), []string{"eu"})
	if errs["eu"] == nil || !strings.Contains(errs["eu"].Error(), "PROM_TOKEN is not set") {
		t.Errorf("errors %v", errs)
	}
}
