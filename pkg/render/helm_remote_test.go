package render

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/registry"
	repo "helm.sh/helm/v4/pkg/repo/v1"
)

// packaged packages the test chart into a .tgz in dir.
func packaged(t *testing.T, dir string) string {
	t.Helper()
	ch, err := loader.Load("testdata/charts/web")
	if err != nil {
		t.Fatal(err)
	}
	tgz, err := chartutil.Save(ch, dir)
	if err != nil {
		t.Fatal(err)
	}
	return tgz
}

// isolated points helm's configuration at empty folders, so that the
// test neither reads nor writes the user's.
func isolated(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HELM_CONFIG_HOME", filepath.Join(home, "config"))
	t.Setenv("HELM_CACHE_HOME", filepath.Join(home, "cache"))
	t.Setenv("HELM_DATA_HOME", filepath.Join(home, "data"))
}

// The same chart from a packaged .tgz, an HTTP chart repository (its
// index.yaml, made with the SDK) and an OCI registry (in process) renders
// the same objects as the folder; each is downloaded once into the cache.
func TestHelmChartSources(t *testing.T) {
	isolated(t)
	pkgDir := t.TempDir()
	tgz := packaged(t, pkgDir)

	index, err := repo.IndexDirectory(pkgDir, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := index.WriteFile(filepath.Join(pkgDir, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	charts := httptest.NewServer(httpFileServer(pkgDir))
	defer charts.Close()

	reg := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	host := strings.TrimPrefix(reg.URL, "http://")
	rc, err := registry.NewClient(registry.ClientOptPlainHTTP())
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(tgz)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rc.Push(data, host+"/charts/web:1.2.3"); err != nil {
		t.Fatalf("pushing to the registry: %v", err)
	}

	c := cluster("c1", "staging", map[string]any{"tag": "1.29"})
	render := func(e *Engine, h *Helm) string {
		t.Helper()
		h.IncludeCRDs, h.ValuesInline = true, map[string]any{"image": "nginx:${tag}"}
		r := e.RenderTarget(context.Background(), Target{Cluster: c, App: "web", Source: Source{Type: HelmChart, Namespace: "shop", Helm: h}})
		if r.Err != nil {
			t.Fatalf("%s: %v", h.Chart, r.Err)
		}
		return string(dump([]Result{r}))
	}
	want := render(&Engine{}, &Helm{Chart: abs("testdata/charts/web")})
	cache := t.TempDir()
	for _, h := range []*Helm{
		{Chart: tgz},
		{Chart: "web", Repo: charts.URL, Version: "1.2.3"},
		{Chart: "web", Repo: charts.URL, Version: "~1.2.0"},
		{Chart: "oci://" + host + "/charts/web", Version: "1.2.3", PlainHTTP: true},
	} {
		if got := render(&Engine{ChartCache: cache}, h); got != want {
			t.Errorf("%s %s %s renders differently from the folder:\n%s", h.Chart, h.Repo, h.Version, got)
		}
	}
	if cached, _ := filepath.Glob(filepath.Join(cache, "*", "*")); len(cached) == 0 {
		t.Error("nothing was cached")
	}
	for _, h := range []*Helm{
		{Chart: "web", Repo: charts.URL, Version: "9.9.9"},
		{Chart: "oci://" + host + "/charts/web", Version: "9.9.9", PlainHTTP: true},
	} {
		r := (&Engine{ChartCache: cache}).RenderTarget(context.Background(), Target{Cluster: c, App: "web", Source: Source{Type: HelmChart, Helm: h}})
		if r.Err == nil || !strings.Contains(r.Err.Error(), "9.9.9") {
			t.Errorf("%s version 9.9.9: %v", h.Chart, r.Err)
		}
	}
}

func httpFileServer(dir string) http.Handler { return http.FileServer(http.Dir(dir)) }
