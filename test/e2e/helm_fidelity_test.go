package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// moduleDir downloads a Go module from the module proxy (charts ship in
// them) and returns its folder.
func moduleDir(t *testing.T, module string) string {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", module).Output()
	if err != nil {
		t.Fatalf("go mod download %s: %v", module, err)
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		t.Fatalf("go mod download %s: %s %v", module, m.Error, err)
	}
	return m.Dir
}

// copyChart copies a chart out of the read-only module cache; a chart
// whose release tool writes Chart.yaml (cert-manager's
// Chart.template.yaml) gets its template, with a version.
func copyChart(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if rel == "Chart.template.yaml" {
			target = filepath.Join(dst, "Chart.yaml")
			data = bytes.ReplaceAll(data, []byte("{{IS_PRERELEASE}}"), []byte("false"))
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// objectsOf parses a YAML stream into objects by kind/name, without the
// namespace helm template leaves out and kubectl fleet sets, and without
// the annotations kubectl fleet adds to say how it applies them.
func objectsOf(t *testing.T, data []byte) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if err != nil {
			break
		}
		var o map[string]any
		if err := yaml.Unmarshal(doc, &o); err != nil {
			t.Fatalf("%v in\n%s", err, doc)
		}
		if o == nil {
			continue
		}
		md, _ := o["metadata"].(map[string]any)
		delete(md, "namespace")
		if ann, ok := md["annotations"].(map[string]any); ok {
			for _, k := range []string{"fleet.kubectl.io/phase", "fleet.kubectl.io/force", "fleet.kubectl.io/prune"} {
				delete(ann, k)
			}
			if len(ann) == 0 {
				delete(md, "annotations")
			}
			// kubectl fleet leaves out the hooks it does not run.
			if h, _ := ann["helm.sh/hook"].(string); h != "" && !strings.Contains(h, "install") && !strings.Contains(h, "upgrade") {
				continue
			}
		}
		out[fmt.Sprintf("%v/%v", o["kind"], md["name"])] = withoutPEM(o).(map[string]any)
	}
	return out
}

// withoutPEM replaces certificates and keys (base64 PEM), which templates
// that call genCA make anew at every render, by a placeholder.
func withoutPEM(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = withoutPEM(x)
		}
	case []any:
		for i, x := range v {
			v[i] = withoutPEM(x)
		}
	case string:
		if strings.HasPrefix(v, "LS0tLS1CRUdJTi") || strings.HasPrefix(v, "-----BEGIN") {
			return "<generated PEM>"
		}
	}
	return v
}

// TestHelmFidelity: for real charts from the module proxy (metrics-server,
// external-dns, cert-manager), with their defaults, each values set the
// charts ship for their own CI and one that enables templates that
// depend on the Kubernetes version, on two Kubernetes versions with extra
// API versions,
// kubectl fleet render gives the same objects as the helm CLI's helm
// template (built from the same module version) of the same chart,
// values, --kube-version and --api-versions.
func TestHelmFidelity(t *testing.T) {
	helm := filepath.Join(binDir, "helm")
	work := t.TempDir()
	charts := map[string]string{
		"metrics-server": filepath.Join(moduleDir(t, "sigs.k8s.io/metrics-server@v0.8.0"), "charts", "metrics-server"),
		"external-dns":   filepath.Join(moduleDir(t, "sigs.k8s.io/external-dns@v0.15.0"), "charts", "external-dns"),
		"cert-manager":   filepath.Join(moduleDir(t, "github.com/cert-manager/cert-manager@v1.16.2"), "deploy", "charts", "cert-manager"),
	}
	const apis = "monitoring.coreos.com/v1,monitoring.coreos.com/v1/ServiceMonitor,policy/v1/PodDisruptionBudget"
	fleetYAML := `apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: fidelity}
groups:
  - {name: all}
clusters:
  - {name: old, group: all, context: fleet-c1, attributes: {kubeVersion: v1.24.9, apiVersions: [` + apis + `]}}
  - {name: new, group: all, context: fleet-c1, attributes: {kubeVersion: v1.37.0, apiVersions: [` + apis + `]}}
`
	if err := os.WriteFile(filepath.Join(work, "fleet.yaml"), []byte(fleetYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	compared, refused := 0, 0
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range charts {
			if !yield(k) {
				return
			}
		}
	}) {
		dir := filepath.Join(work, name)
		copyChart(t, charts[name], dir)
		values := []string{""}
		ci, _ := filepath.Glob(filepath.Join(dir, "ci", "*.yaml"))
		values = append(values, ci...)
		// Templates that depend on the Kubernetes version (a PDB's
		// apiVersion from 1.27, a PodSecurityPolicy before 1.25).
		extra := filepath.Join(work, name+"-versions.yaml")
		if err := os.WriteFile(extra, []byte("podDisruptionBudget: {enabled: true, minAvailable: 1}\nrbac: {pspEnabled: true}\nglobal: {podSecurityPolicy: {enabled: true}}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		values = append(values, extra)
		for _, v := range values {
			for cluster, kube := range map[string]string{"old": "v1.24.9", "new": "v1.37.0"} {
				args := []string{"template", "rel", dir, "-n", "fid", "--kube-version", kube, "--api-versions", apis, "--include-crds", "--skip-tests"}
				ours := []string{"render", "-F", filepath.Join(work, "fleet.yaml"), "-c", cluster, "--chart", dir, "--name", "rel", "-n", "fid", "--show-secrets"}
				if v != "" {
					args = append(args, "-f", v)
					ours = append(ours, "--values", v)
				}
				want, err := exec.Command(helm, args...).Output()
				got, errOut, code := kubectl(t, "", append([]string{"fleet"}, ours...)...)
				if err != nil {
					// A chart that refuses the values (its schema) refuses
					// them in kubectl fleet too.
					if code == 0 {
						t.Errorf("%s values %q: helm template fails (%v), kubectl fleet render does not", name, filepath.Base(v), err)
					}
					refused++
					continue
				}
				if code != 0 {
					t.Errorf("kubectl fleet %s: exit %d\n%s", strings.Join(ours, " "), code, errOut)
					continue
				}
				w, g := objectsOf(t, want), objectsOf(t, []byte(got))
				if len(w) == 0 {
					t.Errorf("%s %s %s: helm template rendered nothing", name, filepath.Base(v), kube)
				}
				if diff := cmp.Diff(w, g); diff != "" {
					t.Errorf("%s values %q, Kubernetes %s: kubectl fleet render differs from helm template (-helm +fleet):\n%s", name, filepath.Base(v), kube, diff)
				}
				compared++
			}
		}
	}
	t.Logf("%d renders compared, %d refused by both", compared, refused)
	if compared < 15 || refused == 0 {
		t.Errorf("%d renders compared and %d refused: the test compares less than it should", compared, refused)
	}
}
