package vet

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/exit"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/ocisource"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/sopsfile"
)

// clustersOf is a Connector with no cluster behind it: its contexts are
// what contexts answers, and connecting fails with connect.
type clustersOf struct {
	contexts, connect  error
	checked, connected int
}

func (c *clustersOf) CheckContexts(context.Context, *fleet.Fleet, []*fleet.Cluster) error {
	c.checked++
	return c.contexts
}

func (c *clustersOf) Connect(context.Context, *fleet.Fleet, *fleet.Cluster) (*kube.Client, error) {
	c.connected++
	return nil, c.connect
}

// vetFleet writes a fleet file of two clusters and an app of one
// ConfigMap, and returns its path.
func vetFleet(t *testing.T, fleetFile string) string {
	t.Helper()
	dir := t.TempDir()
	for name, s := range map[string]string{
		"fleet.yaml": fleetFile,
		"cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: default}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "fleet.yaml")
}

const goodFleet = "apiVersion: fleet/v1alpha1\nkind: Fleet\nmetadata: {name: f}\ngroups: [{name: g}]\nclusters:\n  - {name: a, group: g, context: ca}\n  - {name: b, group: g, context: cb}\napps:\n  - {name: web, manifests: cm.yaml}\n"

// vetRun vets file through conn and returns what it said and its exit
// code.
func vetRun(t *testing.T, r Run) (string, int) {
	t.Helper()
	r.Engine = &render.Engine{Secrets: &sopsfile.Decrypter{}}
	r.Fetcher = &ocisource.Fetcher{CacheDir: t.TempDir()}
	r.Prefix = func(clusters []*fleet.Cluster) *output.Prefixer {
		names, _ := fleet.Index(clusters)
		return output.NewPrefixer(names, false)
	}
	var out bytes.Buffer
	err := r.Vet(context.Background(), NewOut(&out, false))
	var ee *exit.Error
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &ee) && ee.Err == nil:
		return out.String(), ee.Code
	}
	t.Fatalf("vet: %v\n%s", err, out.String())
	return "", 0
}

// TestRunVets: vet's pipeline, from the fleet file to the summary: a
// fleet file that cannot be read whole is its problems and nothing
// else; contexts are checked only when asked, each line of the answer a
// problem; with Server each cluster is asked, once nothing else failed.
func TestRunVets(t *testing.T) {
	file := vetFleet(t, goodFleet)
	for _, tt := range []struct {
		name    string
		run     Run
		conn    clustersOf
		want    []string
		code    int
		checked int
		conns   int
	}{
		{"sound", Run{Contexts: true}, clustersOf{}, []string{"[a] ok: 1 object from app web", "[b] ok: 1 object from app web", "vet: 2 clusters ok"}, 0, 1, 0},
		{"no kubeconfig", Run{}, clustersOf{contexts: errors.New("never asked")}, []string{"vet: 2 clusters ok"}, 0, 0, 0},
		{"contexts missing", Run{Contexts: true}, clustersOf{contexts: errors.New("cluster a: context ca not found\ncluster b: context cb not found")}, []string{"cluster a: context ca not found\ncluster b: context cb not found\n", "vet: 2 problems"}, 1, 1, 0},
		{"contexts missing, with their lines", Run{Contexts: true}, clustersOf{contexts: fleet.ErrorList{{File: "fleet.yaml", Line: 6, Field: "context", Subject: "cluster a", Msg: "not found"}}}, []string{"fleet.yaml:6: cluster a: context: not found", "vet: 1 problem"}, 1, 1, 0},
		{"server rejects", Run{Contexts: true, Server: true}, clustersOf{connect: errors.New("cluster unreachable")}, []string{"[a] cluster unreachable", "[b] ok: 1 object from app web", "vet: 1 problem"}, 1, 1, 1},
		{"server not asked after a problem", Run{Contexts: true, Server: true}, clustersOf{contexts: errors.New("context gone"), connect: errors.New("asked")}, []string{"context gone", "vet: 1 problem"}, 1, 1, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, conn := tt.run, tt.conn
			r.File, r.Connector = file, &conn
			out, code := vetRun(t, r)
			for _, want := range tt.want {
				if !strings.Contains(out, want) {
					t.Errorf("lacks %q", want)
				}
			}
			if code != tt.code || conn.checked != tt.checked || conn.connected != tt.conns {
				t.Errorf("exit %d, contexts checked %d times, %d clusters connected; want %d, %d, %d\n%s", code, conn.checked, conn.connected, tt.code, tt.checked, tt.conns, out)
			}
		})
	}

	bad := vetFleet(t, strings.Replace(goodFleet, "group: g, context: cb", "group: h, context: cb", 1))
	out, code := vetRun(t, Run{File: bad, Contexts: true, Connector: &clustersOf{}})
	if want := bad + ":7: cluster b: group: unknown group \"h\" (groups: g)\nvet: 1 problem in " + bad + "\n"; code != exit.Failed || out != want {
		t.Errorf("a fleet file with a problem: exit %d\n%swant\n%s", code, out, want)
	}
	r := Run{File: filepath.Join(t.TempDir(), "none.yaml"), Connector: &clustersOf{}}
	if err := r.Vet(context.Background(), NewOut(&bytes.Buffer{}, false)); err == nil || errors.As(err, new(*exit.Error)) {
		t.Errorf("no fleet file: %v, want the error as it is", err)
	}
}
