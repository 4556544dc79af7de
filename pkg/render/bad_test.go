package render

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
)

// badDir holds the bad inputs shared with the e2e suite: a fleet with one
// app per bad input, each of which must fail to render.
const badDir = "../../testdata/bad"

// sourceOf is the render source of a fleet app, as the commands build it.
func sourceOf(f *fleet.Fleet, a *fleet.App) Source {
	src := Source{Namespace: a.Namespace, JPath: a.JPath}
	switch {
	case a.Kustomize != "":
		src.Type, src.Path = Kustomize, f.ResolvePath(a.Kustomize)
	case a.Jsonnet != "":
		src.Type, src.Path = Jsonnet, f.ResolvePath(a.Jsonnet)
	default:
		src.Type, src.Path = Manifests, f.ResolvePath(a.Manifests)
	}
	return src
}

// TestBadInputs renders every app of testdata/bad/fleet.yaml and checks
// that it fails, without a panic, with an error that names where: the
// file, the document or field, the object, the variable or the limit.
// Secrets' values must never appear.
func TestBadInputs(t *testing.T) {
	f, err := fleet.Load(filepath.Join(badDir, "fleet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		app     string
		limits  Limits
		attrs   map[string]any
		want    []string // substrings of the error, after "cluster bad: app <app>: "
		notWant []string
	}{
		{app: "malformed-yaml", want: []string{"testdata/bad/yaml/malformed.yaml: document 2: ", "yaml: line 3: did not find expected ',' or '}'"}},
		{app: "metadata-number", want: []string{"testdata/bad/yaml/metadata-number.yaml: document 1: ConfigMap: metadata: want a mapping, got a number"}},
		{app: "kind-list", want: []string{"testdata/bad/yaml/kind-list.yaml: document 1: kind: want a string, got a list"}, notWant: []string{"listed"}},
		{app: "no-kind", want: []string{`testdata/bad/yaml/no-kind.yaml: document 2: object "kindless" has no kind`}},
		{app: "no-apiversion", want: []string{`testdata/bad/yaml/no-apiversion.yaml: document 1: ConfigMap "versionless" has no apiVersion`}},
		{app: "no-name", want: []string{"testdata/bad/yaml/no-name.yaml: document 1: ConfigMap has no metadata.name"}},
		{app: "list-item", want: []string{"testdata/bad/yaml/list-item.yaml: document 1: List item 1: want a Kubernetes object (a mapping), got a number"}},
		// The decoder would refuse it too (TestYAMLDecoderAliasLimits); the
		// expansion check sees it first and names the alias.
		{app: "alias-bomb", want: []string{"testdata/bad/yaml/alias-bomb.yaml: document 1: line 16: alias *g expands the document past the 64 MiB limit"}},
		{app: "alias-amplify", want: []string{"testdata/bad/yaml/alias-amplify.yaml: document 1: line 15: alias *c expands the document past the 64 MiB limit"}},
		{app: "duplicate", want: []string{"ConfigMap web/settings is rendered twice: from ", "testdata/bad/duplicate/a.yaml document 1 and from ", "testdata/bad/duplicate/b.yaml document 2"}},
		{app: "policy-typo", want: []string{`PersistentVolumeClaim web/data (from `, `testdata/bad/policy/typo.yaml document 1): annotation fleet.kubectl.io/prune: "disable" is not one of ["disabled" "enabled" "always"]`}},
		{app: "secret-undefined", want: []string{"Secret web/db: undefined variable ${UNDEFINED} in stringData.password (define the attribute"}, notWant: []string{"hunter2", "s3cr3t"}},
		{app: "secret-unterminated", want: []string{"Secret web/api: unterminated variable reference at byte 7 in stringData.token (a Secret's value is not shown)"}, notWant: []string{"hunter2", "s3cr3t"}},
		{app: "kustomize-outside", want: []string{"kustomize build ", "testdata/bad/kustomize/escape/app: ", "testdata/bad/kustomize/outside.yaml is outside the kustomization folder ", "kustomize reads files only in or below a kustomization's folder"}},
		{app: "kustomize-alias-bomb", want: []string{"kustomize build ", "testdata/bad/kustomize/alias-bomb: ", "testdata/bad/kustomize/alias-bomb/bomb.yaml: document 1: line 16: alias *g expands the document past the 64 MiB limit"}},
		{app: "jsonnet-recurse", want: []string{"testdata/bad/jsonnet/recurse.jsonnet: RUNTIME ERROR: max stack frames exceeded (the limit is 500 nested calls", "recurse.jsonnet:2:18-26"}},
		// Left running once timed out (go-jsonnet cannot be interrupted):
		// it spins a core until the test binary exits.
		{app: "jsonnet-endless", limits: Limits{Timeout: time.Second}, want: []string{"jsonnet ", "testdata/bad/jsonnet/endless.jsonnet: did not finish within 1s (the time limit)"}},
		// 2 MiB of output against a 1 MiB limit; with the defaults it prints
		// 64 MiB and a little more, at a cost of 1.3 GB and seconds.
		{app: "jsonnet-huge-output", limits: Limits{MaxBytes: 1 << 20}, attrs: map[string]any{"doublings": 21}, want: []string{"jsonnet ", "testdata/bad/jsonnet/huge-output.jsonnet: output exceeds the 1 MiB limit"}},
	}
	var covered []string
	for _, tt := range tests {
		covered = append(covered, tt.app)
		t.Run(tt.app, func(t *testing.T) {
			t.Parallel()
			a := f.App(tt.app)
			if a == nil {
				t.Fatalf("no app %s in %s", tt.app, f.Path)
			}
			c := ClusterOf(f, &f.Clusters[0])
			for k, v := range tt.attrs {
				c.Attributes[k] = v
			}
			e := &Engine{Limits: tt.limits}
			start := time.Now()
			r := e.Render(context.Background(), []Target{{Cluster: c, App: a.Name, Source: sourceOf(f, a)}})[0]
			if r.Err == nil {
				t.Fatalf("rendered %d objects, want an error", len(r.Objects))
			}
			msg := r.Err.Error()
			if prefix := "cluster bad: app " + tt.app + ": "; !strings.HasPrefix(msg, prefix) {
				t.Errorf("error does not start with %q:\n%s", prefix, msg)
			}
			for _, want := range tt.want {
				if !strings.Contains(msg, want) {
					t.Errorf("error lacks %q:\n%s", want, msg)
				}
			}
			for _, secret := range tt.notWant {
				if strings.Contains(msg, secret) {
					t.Errorf("error quotes %q:\n%s", secret, msg)
				}
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
	for _, a := range f.Apps {
		if !slices.Contains(covered, a.Name) {
			t.Errorf("app %s of %s has no case here", a.Name, f.Path)
		}
	}
}

// TestYAMLDecoderAliasLimits shows what the YAML decoder does on its own:
// it refuses the "billion laughs" (by how many aliases it uses), but lets a
// few aliases of a large string expand a document a thousandfold, which is
// why checkAliases measures the expansion.
func TestYAMLDecoderAliasLimits(t *testing.T) {
	bomb, err := os.ReadFile(filepath.Join(badDir, "yaml", "alias-bomb.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := yaml.YAMLToJSON(bomb); err == nil || !strings.Contains(err.Error(), "excessive aliasing") {
		t.Errorf("the decoder took the billion laughs: %v", err)
	}
	amplify := fmt.Sprintf("a: &a %s\nb: &b [%s]\nc: [%s]\n",
		strings.Repeat("x", 1024), strings.Repeat("*a,", 63)+"*a", strings.Repeat("*b,", 63)+"*b")
	j, err := yaml.YAMLToJSON([]byte(amplify))
	if err != nil {
		t.Fatal(err)
	}
	if ratio := len(j) / len(amplify); ratio < 1000 {
		t.Errorf("%d bytes of YAML expand to %d of JSON, want the decoder to allow a thousandfold", len(amplify), len(j))
	}
	if err := checkAliases([]byte(amplify), 1<<20); err == nil || err.Error() != "line 3: alias *b expands the document past the 1 MiB limit" {
		t.Errorf("checkAliases: %v", err)
	}
	if err := checkAliases([]byte(amplify), 8<<20); err != nil {
		t.Errorf("checkAliases refused 4 MiB under an 8 MiB limit: %v", err)
	}
}

// endless is standard input that never ends: a YAML comment, forever.
type endless struct{}

var hashes = []byte(strings.Repeat("#", 32<<10))

func (endless) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		n += copy(p[n:], hashes)
	}
	return n, nil
}

// TestHugeInputs feeds inputs past MaxBytes, made here rather than
// committed: standard input that never ends and a file one byte too large,
// at the default limit; a folder, a kustomize build and a substitution
// whose parts fit but whose whole does not, at a small one.
func TestHugeInputs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// A sparse file: 64 MiB and one byte on paper, refused before reading.
	big := write("big/big.yaml", "")
	if err := os.Truncate(big, DefaultMaxBytes+1); err != nil {
		t.Fatal(err)
	}
	cm := func(name string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  pad: %s\n", name, strings.Repeat("x", 600))
	}
	write("folder/a.yaml", cm("a"))
	write("folder/b.yaml", cm("b"))
	write("kust/a.yaml", cm("a"))
	write("kust/b.yaml", cm("b"))
	write("kust/kustomization.yaml", "resources: [a.yaml, b.yaml]\n")
	write("kbig/kustomization.yaml", "resources: [big.yaml]\n")
	if err := os.Link(big, filepath.Join(dir, "kbig", "big.yaml")); err != nil {
		t.Fatal(err)
	}
	subst := write("subst.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: subst\ndata:\n  a: ${big}\n  b: ${big}-${big}\n")

	tests := []struct {
		name   string
		stdin  bool
		src    Source
		limits Limits
		want   string
	}{
		{"endless stdin", true, Source{Type: Manifests, Path: "-"}, Limits{}, "reading standard input: standard input exceeds the 64 MiB limit"},
		{"file too large", false, Source{Type: Manifests, Path: big}, Limits{}, big + " exceeds the 64 MiB limit"},
		{"folder too large", false, Source{Type: Manifests, Path: filepath.Join(dir, "folder")}, Limits{MaxBytes: 1 << 10}, filepath.Join(dir, "folder") + ": its manifest files together exceed the 1 KiB limit"},
		{"kustomize file too large", false, Source{Type: Kustomize, Path: filepath.Join(dir, "kbig")}, Limits{}, "kustomize build " + filepath.Join(dir, "kbig") + ": " + filepath.Join(dir, "kbig", "big.yaml") + " exceeds the 64 MiB limit"},
		{"kustomize output too large", false, Source{Type: Kustomize, Path: filepath.Join(dir, "kust")}, Limits{MaxBytes: 1 << 10}, "kustomize build " + filepath.Join(dir, "kust") + ": output exceeds the 1 KiB limit"},
		{"substitution too large", false, Source{Type: Manifests, Path: subst}, Limits{MaxBytes: 1 << 10}, "ConfigMap subst: variable substitution output exceeds the 1 KiB limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &Engine{Limits: tt.limits}
			if tt.stdin {
				e.Stdin = endless{}
			}
			c := cluster("c1", "g", map[string]any{"big": strings.Repeat("y", 400)})
			r := e.Render(context.Background(), []Target{{Cluster: c, App: "app", Source: tt.src}})[0]
			if want := "cluster c1: app app: " + tt.want; r.Err == nil || r.Err.Error() != want {
				t.Errorf("error %v\nwant  %s", r.Err, want)
			}
		})
	}
}

// TestBounded checks the time bound on its own, on a function that waits
// (so that nothing is left spinning): a cancelled context, the time limit
// and a panic each end the wait with an error saying which.
func TestBounded(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	wait := func() (int, error) { <-release; return 1, nil }

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	if _, err := bounded(ctx, time.Hour, wait); err == nil || err.Error() != "stopped: context canceled" || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if _, err := bounded(context.Background(), 10*time.Millisecond, wait); err == nil || err.Error() != "did not finish within 10ms (the time limit)" {
		t.Errorf("timed out: %v", err)
	}
	if _, err := bounded(context.Background(), time.Hour, func() (int, error) { panic("boom") }); err == nil || err.Error() != "recovered from panic: boom" {
		t.Errorf("panicked: %v", err)
	}
	if v, err := bounded(context.Background(), time.Hour, func() (int, error) { return 7, nil }); v != 7 || err != nil {
		t.Errorf("got %d, %v", v, err)
	}
}

// TestDuplicateAfterDefaultNamespace catches two objects that become one
// only once the app's namespace is set on the one that had none.
func TestDuplicateAfterDefaultNamespace(t *testing.T) {
	in := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: web}\n---\napiVersion: v1\nkind: Pod\nmetadata: {generateName: p-}\n---\napiVersion: v1\nkind: Pod\nmetadata: {generateName: p-}\n"
	e := &Engine{Stdin: strings.NewReader(in)}
	r := e.Render(context.Background(), []Target{{Cluster: cluster("c1", "g", nil), App: "app", Source: Source{Type: Manifests, Path: "-", Namespace: "web"}}})[0]
	want := "cluster c1: app app: ConfigMap web/cm is rendered twice: from standard input document 1 and from standard input document 2"
	if r.Err == nil || r.Err.Error() != want {
		t.Errorf("error %v\nwant  %s", r.Err, want)
	}
	if len(r.Objects) != 4 {
		t.Errorf("%d objects with the error, want all 4 for vet", len(r.Objects))
	}
}
