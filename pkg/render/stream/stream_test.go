package stream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
)

// fakeEngine renders two ConfigMaps and a Secret per target; the targets
// in fail ("cluster" or "cluster/app") fail. gate, if set, is called with
// the target's index before rendering.
type fakeEngine struct {
	fail map[string]bool
	gate func(i int)

	mu       sync.Mutex
	index    map[string]int // target "cluster/app" -> index, for gate
	released []string
}

func (f *fakeEngine) RenderTarget(_ context.Context, t render.Target) render.Result {
	if f.gate != nil {
		f.mu.Lock()
		i := f.index[t.Cluster.Name+"/"+t.App]
		f.mu.Unlock()
		f.gate(i)
	}
	if f.fail[t.Cluster.Name] || f.fail[t.Cluster.Name+"/"+t.App] {
		return render.Result{Target: t, Err: &render.TargetError{Cluster: t.Cluster.Name, App: t.App, Err: errors.New("boom")}} // as Engine.RenderTarget wraps
	}
	var objs []*unstructured.Unstructured
	for _, name := range []string{"a", "b"} {
		objs = append(objs, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": t.App + "-" + name, "namespace": "ns"},
			"data":     map[string]any{"cluster": t.Cluster.Name, "n": "1"},
		}})
	}
	objs = append(objs, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": t.App, "namespace": "ns"},
		"data":     map[string]any{"password": "c2VjcmV0"},
	}})
	return render.Result{Target: t, Objects: objs}
}

func (f *fakeEngine) Release(cluster string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.released = append(f.released, cluster)
}

// streamFleet is clusters c0…c5; app "web" goes to all but c0 and c5,
// app "db" to c2 and c3 only, so c0 and c5 have nothing.
func streamFleet() ([]*fleet.Cluster, []render.Target) {
	var clusters []*fleet.Cluster
	var ts []render.Target
	for i := range 6 {
		c := &fleet.Cluster{Name: fmt.Sprintf("c%d", i), Group: "g"}
		clusters = append(clusters, c)
		rc := render.Cluster{Name: c.Name, Group: c.Group}
		if i > 0 && i < 5 {
			ts = append(ts, render.Target{Cluster: rc, App: "web"})
		}
		if i == 2 || i == 3 {
			ts = append(ts, render.Target{Cluster: rc, App: "db"})
		}
	}
	return clusters, ts
}

func runStream(t *testing.T, f *fakeEngine, format string, parallel int) (string, error) {
	t.Helper()
	clusters, ts := streamFleet()
	f.index = map[string]int{}
	for i, tg := range ts {
		f.index[tg.Cluster.Name+"/"+tg.App] = i
	}
	var out bytes.Buffer
	err := NewPrinter(Options{Out: &out, JSON: format == "json"}).Stream(context.Background(), clusters, ts, f, parallel)
	return out.String(), err
}

// reverse makes all n targets start at once and finish last first.
func reverse(n int) func(int) {
	var all sync.WaitGroup
	all.Add(n)
	finished := make([]chan struct{}, n+1)
	for i := range finished {
		finished[i] = make(chan struct{})
	}
	close(finished[n])
	return func(i int) {
		all.Done()
		all.Wait()
		<-finished[i+1]
		close(finished[i])
	}
}

func TestStreamPrintsInOrder(t *testing.T) {
	_, ts := streamFleet()
	for _, format := range []string{"yaml", "json"} {
		t.Run(format, func(t *testing.T) {
			want, err := runStream(t, &fakeEngine{}, format, 1)
			if err != nil {
				t.Fatal(err)
			}
			got, err := runStream(t, &fakeEngine{gate: reverse(len(ts))}, format, len(ts))
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("out of order rendering printed\n%s\nin order:\n%s", got, want)
			}
			mark := `"cluster":"%s"`
			if format == "yaml" {
				mark = "# Cluster: %s"
			}
			last := -1
			for _, c := range []string{"c0", "c1", "c2", "c3", "c4", "c5"} {
				at := strings.Index(got, fmt.Sprintf(mark, c))
				if at <= last {
					t.Errorf("%s not after the cluster before it:\n%s", c, got)
				}
				last = at
			}
		})
	}
}

func TestStreamYAML(t *testing.T) {
	got, err := runStream(t, &fakeEngine{}, "yaml", 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# Cluster: c0 (no objects)\n# Cluster: c1\napiVersion: v1\n",
		"# Cluster: c5 (no objects)\n",
		"  password: '***'\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in:\n%s", want, got)
		}
	}
	if strings.HasPrefix(got, "---") || strings.Count(got, "---\n") != 4*3+2*3-1 {
		t.Errorf("want a separator between each of the 18 documents, none first:\n%s", got)
	}
	if strings.Contains(got, "c2VjcmV0") {
		t.Errorf("a Secret value was printed:\n%s", got)
	}
}

func TestStreamJSON(t *testing.T) {
	got, err := runStream(t, &fakeEngine{}, "json", 3)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 6 || lines[0] != `{"type":"render","cluster":"c0","group":"g","objects":[]}` {
		t.Fatalf("want 6 lines, c0 with no objects:\n%s", got)
	}
	if !strings.HasPrefix(lines[2], `{"type":"render","cluster":"c2","group":"g","objects":[{"apiVersion":"v1"`) || strings.Count(lines[2], `"kind"`) != 6 {
		t.Errorf("c2 should have web's and db's 6 objects: %s", lines[2])
	}
}

func TestStreamFailure(t *testing.T) {
	// c3's render fails (on both its apps): c1 and c2 are printed, c3 and
	// after are not, c4's failure is listed too (web's, the same as c3's,
	// with it).
	f := &fakeEngine{fail: map[string]bool{"c3": true, "c4": true}}
	got, err := runStream(t, f, "yaml", 2)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"the output stops before cluster c3 (3 of 6 clusters printed)", "clusters c3 and c4: app web: boom", "cluster c3: app db: boom"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if !strings.Contains(got, "Cluster: c2") || strings.Contains(got, "c3\n") || strings.Contains(got, "c4") || strings.Contains(got, "c5") {
		t.Errorf("want c0-c2 printed and nothing from c3 on:\n%s", got)
	}
	if !strings.HasSuffix(got, "# Rendering failed: the output stops before cluster c3.\n") {
		t.Errorf("no last comment saying where the output stops:\n%s", got)
	}
	f.mu.Lock()
	if !slices.Equal(f.released, []string{"c1", "c2", "c3", "c4"}) {
		t.Errorf("released %v, want every cluster with targets", f.released)
	}
	f.mu.Unlock()

	// A cluster is printed whole or not at all: c2's db fails, its web
	// rendered.
	got, err = runStream(t, &fakeEngine{fail: map[string]bool{"c2/db": true}}, "json", 2)
	if err == nil || strings.Contains(got, `"c2"`) || !strings.Contains(got, `"c1"`) {
		t.Errorf("err %v, output:\n%s", err, got)
	}
}

func TestStreamFirstRenderFails(t *testing.T) {
	// c0 has nothing to render and is printed as such; c1 fails.
	got, err := runStream(t, &fakeEngine{fail: map[string]bool{"c1": true}}, "yaml", 2)
	if err == nil || !strings.Contains(err.Error(), "rendering failed: the output stops before cluster c1 (1 of 6 clusters printed)") {
		t.Errorf("err %v", err)
	}
	if want := "# Cluster: c0 (no objects)\n# Rendering failed: the output stops before cluster c1.\n"; got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	got, err = runStream(t, &fakeEngine{fail: map[string]bool{"c1": true}}, "json", 2)
	if err == nil || got != `{"type":"render","cluster":"c0","group":"g","objects":[]}`+"\n" {
		t.Errorf("err %v, output:\n%s", err, got)
	}
}

// failingWriter fails every write after the first.
type failingWriter struct{ writes int }

var errDiskFull = errors.New("disk full")

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.writes++; w.writes > 1 {
		return 0, errDiskFull
	}
	return len(p), nil
}

func TestStreamWriteError(t *testing.T) {
	clusters, ts := streamFleet()
	w := &failingWriter{}
	err := NewPrinter(Options{Out: w}).Stream(context.Background(), clusters, ts, &fakeEngine{}, 2)
	if !errors.Is(err, errDiskFull) {
		t.Fatalf("err %v, want the write's", err)
	}
	if w.writes != 2 {
		t.Errorf("%d writes: printing went on after a failed write", w.writes)
	}
}

func TestStreamInterrupted(t *testing.T) {
	clusters, ts := streamFleet()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out bytes.Buffer
	f := &fakeEngine{index: map[string]int{}}
	for i, tg := range ts {
		f.index[tg.Cluster.Name+"/"+tg.App] = i
	}
	f.gate = func(i int) {
		if i == 2 {
			cancel()
		}
	}
	err := NewPrinter(Options{Out: &out}).Stream(ctx, clusters, ts, f, 1)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted: the output stops before cluster c2") {
		t.Fatalf("err %v", err)
	}
	if strings.Contains(out.String(), "c2") || !strings.Contains(out.String(), "Cluster: c1") {
		t.Errorf("output:\n%s", out.String())
	}
}

// TestStreamCreatesNamespaces: render prints the Namespaces apply creates
// for apps that ask for them (createNamespace), once per cluster, before
// the app's objects, and not where a render has it already: what apply
// sends, for a GitOps hand-off.
func TestStreamCreatesNamespaces(t *testing.T) {
	c := &fleet.Cluster{Name: "c1", Group: "g"}
	rc := render.Cluster{Name: c.Name, Group: c.Group}
	ts := []render.Target{
		{Cluster: rc, App: "web", CreateNamespace: "shop"},
		{Cluster: rc, App: "api", CreateNamespace: "shop"},
		{Cluster: rc, App: "db"},
	}
	for _, dir := range []bool{false, true} {
		var out bytes.Buffer
		o := Options{Out: &out}
		if dir {
			o.Dir, o.Progress, o.Prefix = t.TempDir(), io.Discard, output.NewPrefixer([]string{"c1"}, false)
		}
		if err := NewPrinter(o).Stream(context.Background(), []*fleet.Cluster{c}, ts, &fakeEngine{}, 2); err != nil {
			t.Fatal(err)
		}
		got := out.String()
		if dir {
			entries, _ := os.ReadDir(filepath.Join(o.Dir, "c1"))
			for _, e := range entries {
				got += e.Name() + "\n"
			}
			got = strings.ReplaceAll(got, "namespace_", "Namespace_")
		}
		if strings.Count(got, "Namespace") != 1 || !dir && strings.Index(got, "kind: Namespace") > strings.Index(got, "name: web-a") {
			t.Errorf("output dir %v: want one Namespace shop, before web's objects:\n%s", dir, got)
		}
	}
}
