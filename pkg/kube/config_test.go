package kube

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
)

func TestCheckContexts(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", `apiVersion: v1
kind: Config
clusters: [{name: k, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {}}]
contexts:
  - {name: ctx-0, context: {cluster: k, user: u}}
  - {name: dangling, context: {cluster: nowhere, user: u}}
`)
	empty := write("empty", "apiVersion: v1\nkind: Config\n")
	broken := write("broken", "apiVersion: v1\nkind: Config\nclusters: [bad\n")
	fleetFile := func(n int, kubeconfig string) *fleet.Fleet {
		var b strings.Builder
		b.WriteString("apiVersion: fleet/v1alpha1\nkind: Fleet\nmetadata: {name: f}\ngroups: [{name: g}]\nclusters:\n")
		for i := range n {
			if kubeconfig == "" {
				fmt.Fprintf(&b, "  - {name: c%d, group: g, context: ctx-%d}\n", i, i)
			} else {
				fmt.Fprintf(&b, "  - {name: c%d, group: g, context: ctx-%d, kubeconfig: %s}\n", i, i, kubeconfig)
			}
		}
		f, err := fleet.Parse([]byte(b.String()), "fleet.yaml", dir)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, tt := range []struct {
		name       string
		f          *fleet.Fleet
		wantErrors []string // substrings of the one error line (none: no error)
	}{
		{"all found", fleetFile(1, good), nil},
		{"one missing of two: each said", fleetFile(2, good), []string{`fleet.yaml:7: cluster c1: context: context "ctx-1" not found in kubeconfig ` + good + `: did you mean "ctx-0"? (it has contexts ctx-0, dangling)`}},
		{"the wrong kubeconfig: said once", fleetFile(8, empty), []string{`fleet.yaml:6: cluster c0: context: kubeconfig ` + empty + ` has none of the contexts of 8 clusters: c0, c1, c2, c3, c4 and 3 more (contexts ctx-0, ctx-1, ctx-2, ctx-3, ctx-4 and 3 more); it has no contexts at all: is $KUBECONFIG or --kubeconfig right?`}},
		{"a kubeconfig file that does not exist: said once", fleetFile(8, filepath.Join(dir, "none")), []string{`fleet.yaml:6: cluster c0: context: loading kubeconfig ` + filepath.Join(dir, "none") + `: stat `, `no such file or directory (used by 8 clusters: c0, c1, c2, c3, c4 and 3 more)`}},
		{"$KUBECONFIG names no file: said once", fleetFile(8, ""), []string{`fleet.yaml:6: cluster c0: context: kubeconfig ` + filepath.Join(dir, "none") + ` does not exist (used by 8 clusters: c0, c1, c2, c3, c4 and 3 more)`}},
		{"a kubeconfig that cannot be read: said once", fleetFile(3, broken), []string{`fleet.yaml:6: cluster c0: context: loading kubeconfig ` + broken + `: `, `(used by 3 clusters: c0, c1, c2)`}},
	} {
		t.Setenv("KUBECONFIG", filepath.Join(dir, "none"))
		t.Run(tt.name, func(t *testing.T) {
			err := CheckContexts(NewConfigFlags(), &Kubeconfigs{}, tt.f, clustersOf(tt.f))
			if tt.wantErrors == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			// Every case here is said in one line: a cause shared by many
			// clusters is said once.
			if n := strings.Count(err.Error(), "\n") + 1; n != 1 {
				t.Errorf("%d lines, want 1:\n%v", n, err)
			}
			for _, want := range tt.wantErrors {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error\n%v\nlacks %q", err, want)
				}
			}
		})
	}
	// A context that points at a cluster the kubeconfig lacks.
	f, _ := fleet.Parse([]byte("apiVersion: fleet/v1alpha1\nkind: Fleet\nmetadata: {name: f}\ngroups: [{name: g}]\nclusters:\n  - {name: d, group: g, context: dangling, kubeconfig: "+good+"}\n"), "fleet.yaml", dir)
	if err := CheckContexts(NewConfigFlags(), &Kubeconfigs{}, f, clustersOf(f)); err == nil || !strings.Contains(err.Error(), `context "dangling" refers to cluster "nowhere"`) {
		t.Errorf("dangling context: %v", err)
	}
}

func clustersOf(f *fleet.Fleet) []*fleet.Cluster {
	out := make([]*fleet.Cluster, len(f.Clusters))
	for i := range f.Clusters {
		out[i] = &f.Clusters[i]
	}
	return out
}

// TestCheckContextsOneServerTwice: two entries whose contexts point at
// one API server (the URL compared without case or trailing slash) are
// refused, unless one says it is the other; two servers are fine.
func TestCheckContextsOneServerTwice(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters:
  - {name: one, cluster: {server: "https://10.0.0.1:6443"}}
  - {name: one-again, cluster: {server: "https://10.0.0.1:6443/"}}
  - {name: two, cluster: {server: "https://10.0.0.2:6443"}}
users: [{name: u, user: {}}]
contexts:
  - {name: stg, context: {cluster: one, user: u}}
  - {name: p1, context: {cluster: one-again, user: u, namespace: prod}}
  - {name: p2, context: {cluster: two, user: u}}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, stg, same, want string
	}{
		{"one server twice", "", "", `fleet.yaml:7: cluster p1: context: context "p1" points at https://10.0.0.1:6443/, as cluster stg's context "stg" does: two entries of one API server would share every app's records there; remove one, or say sameClusterAs: stg`},
		{"on purpose", "", ", sameClusterAs: stg", ""},
		// stg was pinned on another server, and p1 on this one: stg's
		// context moved (clusters --check --pin, then a kubeconfig
		// edited), so stg is named, with both pins, before the rule.
		{"a pinned context repointed", ", server: https://10.0.0.9:6443, uid: 9999", ", server: https://10.0.0.1:6443, uid: 1111",
			`fleet.yaml:6: cluster stg: context: context "stg" now points at https://10.0.0.1:6443, not at the server pinned for it (server: https://10.0.0.9:6443, uid: 9999); that is cluster p1's server (server: https://10.0.0.1:6443/, uid: 1111): point the context back at https://10.0.0.9:6443; if stg really moved there, it is one API server with p1, which would share every app's records: remove one, or say sameClusterAs: p1`},
		{"the later entry repointed", ", server: https://10.0.0.1:6443", ", server: https://10.0.0.8:6443",
			`fleet.yaml:7: cluster p1: context: context "p1" now points at https://10.0.0.1:6443/, not at the server pinned for it (server: https://10.0.0.8:6443); that is cluster stg's server (server: https://10.0.0.1:6443): point the context back at https://10.0.0.8:6443; if p1 really moved there, it is one API server with stg, which would share every app's records: remove one, or say sameClusterAs: stg`},
		{"both pinned where they point", ", server: https://10.0.0.1:6443", "", `fleet.yaml:7: cluster p1: context: context "p1" points at https://10.0.0.1:6443/, as cluster stg's context "stg" does: two entries of one API server would share every app's records there; remove one, or say sameClusterAs: stg`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, err := fleet.Parse([]byte("apiVersion: fleet/v1alpha1\nkind: Fleet\nmetadata: {name: f}\ngroups: [{name: staging}, {name: production}]\nclusters:\n"+
				"  - {name: stg, group: staging, context: stg, kubeconfig: "+kc+tt.stg+"}\n"+
				"  - {name: p1, group: production, context: p1, kubeconfig: "+kc+tt.same+"}\n"+
				"  - {name: p2, group: production, context: p2, kubeconfig: "+kc+"}\n"), "fleet.yaml", dir)
			if err != nil {
				t.Fatal(err)
			}
			var clusters []*fleet.Cluster
			for i := range f.Clusters {
				clusters = append(clusters, &f.Clusters[i])
			}
			err = CheckContexts(nil, &Kubeconfigs{}, f, clusters)
			if got := errString(err); got != tt.want {
				t.Errorf("CheckContexts = %q\nwant            %q", got, tt.want)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
