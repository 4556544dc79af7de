package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/logging"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render/stream"
)

// TestReconcilePassOptions: each pass gets apply's flags as given.
func TestReconcilePassOptions(t *testing.T) {
	g := &GlobalOptions{ConfigFlags: kube.NewConfigFlags()}
	cmd, o := newCmdReconcile(g)
	args := []string{"--prune", "--allow-empty", "--wait", "--timeout", "42s", "--concurrency", "3", "--history-limit", "7", "--atomic", "--skip-tests", "--keep-tests",
		"--force-conflicts", "--diff", "--yes", "--parallel", "4", "--lock-duration", "33s", "--lock-timeout", "5s", "-g", "staging", "--app", "web", "--report", "r.md"}
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(cmd); err != nil {
		t.Fatal(err)
	}
	a := o.passOptions()
	tv, av := reflect.ValueOf(o.apply).Elem(), reflect.ValueOf(a).Elem()
	for i := 0; i < tv.NumField(); i++ {
		f := tv.Type().Field(i)
		if !f.IsExported() || f.Name == "PlanFile" {
			continue
		}
		if !reflect.DeepEqual(tv.Field(i).Interface(), av.Field(i).Interface()) && f.Name != "ReportOptions" {
			t.Errorf("%s: pass has %v, flags say %v", f.Name, av.Field(i).Interface(), tv.Field(i).Interface())
		}
	}
	locks := &a.newEngine(g).Locks
	if locks.Duration != 33*time.Second || locks.Timeout != 5*time.Second || a.ReportOptions.Report != "r.md" || a.collected == nil || a.collected == o.apply.collected {
		t.Errorf("locks %v/%v, report %q, collector %p (flags' %p)", locks.Duration, locks.Timeout, a.ReportOptions.Report, a.collected, o.apply.collected)
	}
	if !a.withTests == !a.SkipTests {
		t.Errorf("withTests %v with --skip-tests", a.withTests)
	}
}

// Every flag of apply is reconcile's too (registered once), but those
// that make no sense for a loop.
func TestReconcileHasApplyFlags(t *testing.T) {
	notForALoop := map[string]bool{"plan": true, "dry-run": true, "output": true, "retry-rolled-back": true} // a loop never retries what rolled back by itself
	g := &GlobalOptions{}
	apply, reconcile := NewCmdApply(g), NewCmdReconcile(g)
	apply.Flags().VisitAll(func(f *pflag.Flag) {
		r := reconcile.Flags().Lookup(f.Name)
		switch {
		case notForALoop[f.Name]:
			if r != nil {
				t.Errorf("reconcile has --%s", f.Name)
			}
		case r == nil:
			t.Errorf("reconcile lacks apply's --%s", f.Name)
		case r.DefValue != f.DefValue:
			t.Errorf("--%s: reconcile's default %q, apply's %q", f.Name, r.DefValue, f.DefValue)
		}
	})
}

func TestReconcileValidate(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--once", "--interval", "1m"}, "--once does one pass"},
		{[]string{"--interval", "0s"}, "--interval must be positive"},
		{[]string{"--log-format", "xml"}, `--log-format "xml"`},
		{[]string{"--metrics-addr", "8080"}, "--metrics-addr"},
		{[]string{"-f", "-"}, "reads standard input once"},
		{[]string{"--allow-empty"}, "--allow-empty only works with --prune"},
	} {
		_, errOut, code := run(t, "", append([]string{"reconcile", "-F", example}, tt.args...)...)
		if code != 1 || !strings.Contains(errOut, tt.want) {
			t.Errorf("%v: exit %d, %q; want %q", tt.args, code, errOut, tt.want)
		}
	}
}

// TestReconcileProtected: reconcile never asks; a protected group needs
// --yes, and the refusal comes before any cluster is contacted.
func TestReconcileProtected(t *testing.T) {
	out, errOut, code := run(t, "y\n", "reconcile", "--once", "-F", example)
	if code != 1 || !strings.Contains(errOut, "group production is protected (prod-eu, prod-us) and reconcile never asks: pass --yes") {
		t.Errorf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if strings.Contains(out+errOut, "[prod") || strings.Contains(out+errOut, "127.0.0.1") {
		t.Errorf("a cluster was contacted:\n%s%s", out, errOut)
	}
}

// badFleet is a fleet file that fails every pass, before any cluster.
func badFleet(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	f := filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(f, []byte(`apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: bad}
groups: [{name: all}]
clusters: [{name: c1, group: all, context: fleet-c1}]
apps: [{name: web, manifests: missing}]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// signalWriter cancels when a line containing marker is written.
type signalWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	marker string
	n      int
	cancel func()
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Count(w.buf.String(), w.marker) >= w.n && w.cancel != nil {
		w.cancel()
		w.cancel = nil
	}
	return len(p), nil
}

func (w *signalWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestReconcileLoop: a failed pass does not end the loop (it would exit
// 1); a signal that comes during a pass lets it finish, and the sleep
// after it does not start: exit 0 at once (an hour's --interval would
// hang the test otherwise); --once exits with the pass's result; with
// --log-format json every line is a JSON object.
func TestReconcileLoop(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join("testdata", "kubeconfig"))
	f := badFleet(t)
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			w := &signalWriter{marker: "pass 1 failed", n: 1, cancel: cancel}
			done := make(chan int, 1)
			go func() {
				done <- Execute(ctx, genericiooptions.IOStreams{In: strings.NewReader(""), Out: w, ErrOut: w}, []string{"reconcile", "-F", f, "--interval", "1h", "--log-format", format})
			}()
			code := <-done
			if code != 0 {
				t.Errorf("exit %d after a signal:\n%s", code, w.String())
			}
			if !strings.Contains(w.String(), "pass 1 failed") || !strings.Contains(w.String(), "missing does not exist") {
				t.Errorf("the failed passes are not said:\n%s", w.String())
			}
			if format == "json" {
				for _, line := range strings.Split(strings.TrimSpace(w.String()), "\n") {
					var m map[string]any
					if err := json.Unmarshal([]byte(line), &m); err != nil || m["time"] == nil || m["level"] == nil || m["msg"] == nil {
						t.Errorf("not a JSON log line (%v): %s", err, line)
					}
				}
			}
		})
	}
	t.Run("once", func(t *testing.T) {
		out, errOut, code := run(t, "", "reconcile", "-F", f, "--once")
		if code != 1 || !strings.Contains(errOut, "pass 1 failed") || strings.Count(out+errOut, "missing does not exist") != 1 {
			t.Errorf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
	})
}

// TestReconcileExample: examples/reconcile builds with kustomize; its
// fleet file vets; the Deployment's and the CronJob's arguments are
// reconcile's flags, and their volumes name the ConfigMaps the
// kustomization makes.
func TestReconcileExample(t *testing.T) {
	const dir = "../../examples/reconcile"
	if out, errOut, code := run(t, "", "vet", "--no-kubeconfig", "-F", filepath.Join(dir, "fleet.yaml")); code != 0 {
		t.Fatalf("vet: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code := run(t, "", "render", "-F", example, "-c", "staging-eu", "-k", dir, "-o", "json")
	if code != 0 {
		t.Fatalf("render: exit %d\n%s", code, errOut)
	}
	var rc stream.RenderedCluster
	if err := json.Unmarshal([]byte(out), &rc); err != nil {
		t.Fatal(err)
	}
	configMaps := map[string]string{} // generated name → its file
	var deployment map[string]any
	for _, o := range rc.Objects {
		u := unstructured.Unstructured{Object: o}
		switch u.GetKind() {
		case "ConfigMap":
			for key := range u.Object["data"].(map[string]any) {
				configMaps[u.GetName()] = key
			}
		case "Deployment":
			deployment = u.Object
		}
	}
	if deployment == nil || len(configMaps) != 2 {
		t.Fatalf("deployment %v, config maps %v", deployment != nil, configMaps)
	}
	statefulSet := shardedExample(t)
	fleetFile, err := os.ReadFile(filepath.Join(dir, "fleet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cronjob, err := os.ReadFile(filepath.Join(dir, "cronjob.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cj map[string]any
	if err := yaml.Unmarshal(cronjob, &cj); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		name string
		pod  map[string]any
		once bool
		// generated: the ConfigMaps have the kustomization's names
		generated bool
	}{
		{"deployment", nested(deployment, "spec", "template", "spec"), false, true},
		{"cronjob", nested(cj, "spec", "jobTemplate", "spec", "template", "spec"), true, false},
		{"statefulset", nested(statefulSet, "spec", "template", "spec"), false, true},
	} {
		c := w.pod["containers"].([]any)[0].(map[string]any)
		var args []string
		for _, a := range c["args"].([]any) {
			args = append(args, a.(string))
		}
		g := &GlobalOptions{ConfigFlags: kube.NewConfigFlags()}
		cmd, o := newCmdReconcile(g)
		o.hostname = func() string { return "kubectl-fleet-2" }
		g.addFlags(cmd) // --fleet, the root's
		if args[0] != "reconcile" {
			t.Errorf("%s: args %v", w.name, args)
		}
		if err := cmd.ParseFlags(args[1:]); err != nil {
			t.Errorf("%s: %v", w.name, err)
			continue
		}
		if err := o.Validate(cmd); err != nil || o.Once != w.once || !o.apply.Yes || !o.CorrectDrift {
			t.Errorf("%s: %v, once %v, yes %v", w.name, err, o.Once, o.apply.Yes)
		}
		if want := (fleet.Shard{}); w.name == "statefulset" {
			want = fleet.Shard{Index: 2, Count: 3}
			if n := nested(statefulSet, "spec")["replicas"]; n != float64(want.Count) {
				t.Errorf("statefulset: %v replicas, --shard says %d", n, want.Count)
			}
			if o.Shard != want {
				t.Errorf("statefulset: pod kubectl-fleet-2 is shard %v, want %v", o.Shard, want)
			}
		}
		for _, v := range w.pod["volumes"].([]any) {
			sources, _ := nested(v.(map[string]any), "projected")["sources"].([]any)
			for _, s := range sources {
				name := nested(s.(map[string]any), "configMap")["name"].(string)
				if _, ok := configMaps[name]; w.generated && !ok {
					t.Errorf("%s: volume names ConfigMap %s; the kustomization makes %v", w.name, name, configMaps)
				}
			}
		}
	}
	for name, key := range configMaps {
		if key == "fleet.yaml" && !strings.HasPrefix(name, "fleet-file-") {
			t.Errorf("fleet.yaml is in %s", name)
		}
	}
	if !bytes.Contains(fleetFile, []byte("kubeconfigFrom: {env: KUBECONFIG_STAGING_EU}")) {
		t.Error("the example fleet file no longer shows kubeconfigFrom")
	}
}

// shardedExample renders examples/reconcile-sharded and returns its
// StatefulSet, which takes the place of ../reconcile's Deployment.
func shardedExample(t *testing.T) map[string]any {
	t.Helper()
	out, errOut, code := run(t, "", "render", "-F", example, "-c", "staging-eu", "-k", "../../examples/reconcile-sharded", "-o", "json")
	if code != 0 {
		t.Fatalf("render the sharded example: exit %d\n%s", code, errOut)
	}
	var rc stream.RenderedCluster
	if err := json.Unmarshal([]byte(out), &rc); err != nil {
		t.Fatal(err)
	}
	var sts map[string]any
	for _, o := range rc.Objects {
		switch (&unstructured.Unstructured{Object: o}).GetKind() {
		case "Deployment":
			t.Error("the sharded example keeps the Deployment beside its StatefulSet")
		case "StatefulSet":
			sts = o
		}
	}
	if sts == nil {
		t.Fatal("the sharded example has no StatefulSet")
	}
	return sts
}

func nested(m map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		next, _ := m[k].(map[string]any)
		m = next
	}
	return m
}

// TestJSONLoggingNeverWritesBodies: client-go's logs in --log-format json
// are JSON lines with time, level and msg, at the -v asked, and bodies are
// never written.
func TestJSONLoggingNeverWritesBodies(t *testing.T) {
	var buf bytes.Buffer
	logging.SetupJSON(8, &buf)
	defer logging.Setup(0, &bytes.Buffer{})
	const secret = `{"kind":"Secret","data":{"password":"aHVudGVyMg=="}}`
	logger := klog.Background()
	logger.V(8).Info("Request Body", "body", secret)
	logger.V(6).Info("HTTP", "verb", "GET", "status", "200 OK")
	klog.Warning("a warning")
	logger.V(9).Info("too verbose")
	out := buf.String()
	for _, never := range []string{"aHVudGVyMg==", "too verbose"} {
		if strings.Contains(out, never) {
			t.Errorf("%q written:\n%s", never, out)
		}
	}
	var levels, msgs []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil || m["time"] == nil {
			t.Fatalf("not a JSON log line (%v): %s", err, line)
		}
		levels, msgs = append(levels, fmt.Sprint(m["level"])), append(msgs, fmt.Sprint(m["msg"]))
		if m["msg"] == "Request Body" && !strings.Contains(fmt.Sprint(m["body"]), "bytes not shown") {
			t.Errorf("body: %v", m["body"])
		}
	}
	if diff := cmp.Diff([]string{"Request Body", "HTTP", "a warning"}, msgs); diff != "" {
		t.Errorf("messages (-want +got):\n%s\n%s", diff, out)
	}
	// klog's warnings reach a logr logger as Info.
	if diff := cmp.Diff([]string{"debug", "debug", "info"}, levels); diff != "" {
		t.Errorf("levels (-want +got):\n%s", diff)
	}
}
