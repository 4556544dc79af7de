package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/internal/golden"
	"github.com/kubectl-fleet/kubectl-fleet/internal/schemagen"
	"github.com/kubectl-fleet/kubectl-fleet/schema"
)

// initKubeconfig is a kubeconfig of several contexts as people have them:
// kind, an EKS ARN, dev and production names.
const initKubeconfig = `apiVersion: v1
kind: Config
clusters:
- {name: a, cluster: {server: "https://127.0.0.1:1"}}
- {name: b, cluster: {server: "https://127.0.0.1:2"}}
- {name: c, cluster: {server: "https://127.0.0.1:3"}}
- {name: d, cluster: {server: "https://127.0.0.1:4"}}
- {name: e, cluster: {server: "https://127.0.0.1:5"}}
contexts:
- {name: kind-staging, context: {cluster: b, user: u}}
- {name: prod-eu, context: {cluster: c, user: u}}
- {name: prod-us, context: {cluster: d, user: u}}
- {name: "arn:aws:eks:eu-west-1:1234:cluster/prod-eks", context: {cluster: e, user: u}}
- {name: dev, context: {cluster: a, user: u}}
users:
- {name: u, user: {token: do-not-print-this-token}}
`

// initDir is a folder with the kubeconfig, and the working folder.
func initDir(t *testing.T, kubeconfig string) (dir, kc string) {
	t.Helper()
	dir = t.TempDir()
	kc = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	return dir, kc
}

// TestInit: a fleet file from a kubeconfig of several contexts, groups
// guessed, with an example app: golden, passing vet and the schema.
func TestInit(t *testing.T) {
	dir, kc := initDir(t, initKubeconfig)
	out, errOut, code := run(t, "", "init", "--kubeconfig", kc)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	golden.Assert(t, filepath.Join(repo, "pkg/cmd/testdata/golden/init.txt"), []byte(out))
	b, err := os.ReadFile(filepath.Join(dir, "fleet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, filepath.Join(repo, "pkg/cmd/testdata/golden/init-fleet.yaml"), bytes.ReplaceAll(b, []byte(dir), []byte("DIR")))
	if !bytes.HasPrefix(b, []byte("# yaml-language-server: $schema="+schema.ID+"\n")) {
		t.Error("no yaml-language-server line first")
	}
	if out, errOut, code := run(t, "", "vet"); code != 0 || !strings.Contains(out, "vet: 5 clusters ok") {
		t.Errorf("vet of what init wrote: exit %d\n%s%s", code, out, errOut)
	}
	if out, _, _ := run(t, "", "render", "-c", "dev"); !strings.Contains(out, "cluster: dev\n  greeting: hello\n  group: staging\n") {
		t.Errorf("the example app's render:\n%s", out)
	}
	if err := schemagen.Validate(schema.JSON, b); err != nil {
		t.Errorf("the fleet file fails the schema: %v", err)
	}
	if out, _, code := run(t, "", "schema"); code != 0 || !bytes.Equal([]byte(out), schema.JSON) {
		t.Errorf("kubectl fleet schema: exit %d, %d bytes", code, len(out))
	}

	// Run again: the file is kept; --force writes it anew, the app the
	// user may have edited is kept.
	app := filepath.Join(dir, "apps/hello/hello.yaml")
	if err := os.WriteFile(app, []byte("# mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := run(t, "", "init", "--kubeconfig", kc); code != 1 || !strings.Contains(errOut, "fleet.yaml exists: kubectl fleet init does not overwrite it without --force") {
		t.Errorf("init over a fleet file: exit %d, %s", code, errOut)
	}
	if _, errOut, code := run(t, "", "init", "--kubeconfig", kc, "--force", "--group", "stg=kind-*,dev", "--group", "prod=prod-*,arn:*"); code != 0 {
		t.Errorf("init --force: exit %d, %s", code, errOut)
	}
	if b, _ := os.ReadFile(app); string(b) != "# mine\n" {
		t.Errorf("init wrote over the app: %q", b)
	}
}

// TestInitRefuses: a context no --group takes, a kubeconfig without
// contexts, a context that fails vet: nothing is written.
func TestInitRefuses(t *testing.T) {
	broken := strings.Replace(initKubeconfig, "- {name: dev, context: {cluster: a, user: u}}", "- {name: dev, context: {cluster: gone, user: u}}", 1)
	for _, tt := range []struct {
		name, kubeconfig string
		args             []string
		want             string
	}{
		{"a context in no group", initKubeconfig, []string{"--group", "staging=kind-*"}, "no --group takes the contexts arn:aws:eks:eu-west-1:1234:cluster/prod-eks, dev, prod-eu, prod-us"},
		{"a bad group", initKubeconfig, []string{"--group", "Staging"}, `--group "Staging": want NAME=GLOB`},
		{"no context", initKubeconfig, []string{"--contexts", "gke-*"}, "no context to take: the kubeconfig has contexts arn:aws:eks:eu-west-1:1234:cluster/prod-eks, dev, kind-staging, prod-eu, prod-us"},
		{"fails vet", broken, nil, `context "dev" refers to cluster "gone", which kubeconfig`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir, kc := initDir(t, tt.kubeconfig)
			out, errOut, code := run(t, "", append([]string{"init", "--kubeconfig", kc}, tt.args...)...)
			if code != 1 || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, want 1 and %q:\n%s%s", code, tt.want, out, errOut)
			}
			if strings.Contains(out+errOut, "do-not-print-this-token") {
				t.Error("init printed a credential")
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 {
				t.Errorf("init left files behind: %v", entries)
			}
		})
	}
}

// repo is the module's folder, from this package's (before a test
// changes the working folder).
var repo, _ = filepath.Abs("../..")

// TestInitOneEntryPerServer: two contexts of one API server make one
// cluster entry, the other said left out: a fleet file refuses two
// entries of one server.
func TestInitOneEntryPerServer(t *testing.T) {
	shared := strings.Replace(initKubeconfig, "- {name: prod-us, context: {cluster: d, user: u}}", "- {name: prod-us, context: {cluster: c, user: u}}", 1)
	dir, kc := initDir(t, shared)
	out, errOut, code := run(t, "", "init", "--kubeconfig", kc)
	if code != 0 || !strings.Contains(errOut, "note: context prod-us: the API server of prod-eu: left out") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	b, err := os.ReadFile(filepath.Join(dir, "fleet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "context: prod-us") || !strings.Contains(string(b), "context: prod-eu") {
		t.Errorf("the fleet file:\n%s", b)
	}
}
