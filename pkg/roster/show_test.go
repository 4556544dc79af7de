package roster

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
)

// TestListingShow: a listing names a kubeconfigFrom without reading it
// and says a missing context after the rows; --check reads the
// kubeconfigFrom, stops at a missing context before any request, and
// fails for a cluster it cannot reach, after the rows.
func TestListingShow(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: k, cluster: {server: \"https://127.0.0.1:1\"}}]\nusers: [{name: u, user: {}}]\ncontexts: [{name: ca, context: {cluster: k, user: u}}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := fleet.Parse([]byte(`apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: f}
groups: [{name: g}]
clusters:
  - {name: a, group: g, context: ca}
  - {name: b, group: g, context: gone}
  - {name: c, group: g, context: ca, kubeconfigFrom: {env: ROSTER_TEST_KUBECONFIG}}
`), filepath.Join(dir, "fleet.yaml"), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("ROSTER_TEST_KUBECONFIG", "")
	cf := kube.NewConfigFlags()
	cf.KubeConfig = &kc
	timeout := "2s"
	cf.Timeout = &timeout
	for _, tt := range []struct {
		name     string
		clusters []string
		check    bool
		out      []string // what the listing says, in order; none: nothing
		err      string
	}{
		{"listed", []string{"a", "b", "c"}, false, []string{"NAME", "a ", "https://127.0.0.1:1", "b ", "<context not found>", "c ", "<kubeconfigFrom env:ROSTER_TEST_KUBECONFIG>"}, `context "gone" not found`},
		{"checked, a context missing", []string{"a", "b"}, true, nil, `context "gone" not found`},
		{"checked, a kubeconfigFrom unread", []string{"a", "c"}, true, nil, "ROSTER_TEST_KUBECONFIG"},
		{"checked, unreachable", []string{"a"}, true, []string{"NAME", "STATUS", "a "}, "1 of 1 clusters failed the check"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var clusters []*fleet.Cluster
			for _, name := range tt.clusters {
				clusters = append(clusters, f.Cluster(name))
			}
			l := Listing{Flags: cf, Fleet: f, Clusters: clusters, Sources: &kube.KubeconfigSources{}, Check: tt.check, Parallel: 2}
			var out, errOut bytes.Buffer
			err := l.Show(context.Background(), &out, &errOut)
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("err %v, want %q", err, tt.err)
			}
			rest := out.String()
			for _, want := range tt.out {
				i := strings.Index(rest, want)
				if i < 0 {
					t.Errorf("lacks %q after what came before:\n%s", want, out.String())
					break
				}
				rest = rest[i+len(want):]
			}
			if tt.out == nil && out.Len() > 0 {
				t.Errorf("listed before the error:\n%s", out.String())
			}
		})
	}
}
