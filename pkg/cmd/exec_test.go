package cmd

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
)

// Every kubectl flag kubectl fleet accepts reaches the kubectl that exec
// runs for each cluster; none is dropped.
func TestExecPassesFlags(t *testing.T) {
	f, err := fleet.Parse([]byte(`apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: f}
groups: [{name: g}]
clusters:
  - {name: a, group: g, context: ctx-a}
  - {name: b, group: g, context: ctx-b, kubeconfig: /kc/b}
`), "fleet.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		flags []string
		want  map[string][]string // cluster: the flags before the user's arguments
	}{
		{nil, map[string][]string{"a": {"--context", "ctx-a"}, "b": {"--context", "ctx-b", "--kubeconfig", "/kc/b"}}},
		{[]string{"--kubeconfig", "/kc/all"}, map[string][]string{"a": {"--context", "ctx-a", "--kubeconfig", "/kc/all"}, "b": {"--context", "ctx-b", "--kubeconfig", "/kc/b"}}},
		{[]string{"-n", "web", "--as", "jane", "--as-group", "dev", "--as-group", "ops", "--as-uid", "42", "--request-timeout", "5s", "--cache-dir", "/tmp/c", "--v", "6"},
			map[string][]string{"a": {"--context", "ctx-a", "--as", "jane", "--as-uid", "42", "--as-group", "dev", "--as-group", "ops", "--namespace", "web", "--request-timeout", "5s", "--cache-dir", "/tmp/c", "-v", "6"}}},
	} {
		g := &GlobalOptions{IOStreams: genericiooptions.NewTestIOStreamsDiscard(), ConfigFlags: kube.NewConfigFlags()}
		root := &cobra.Command{}
		g.addFlags(root)
		if err := root.PersistentFlags().Parse(tt.flags); err != nil {
			t.Fatal(err)
		}
		for name, want := range tt.want {
			if got := kube.KubectlArgs(g.ConfigFlags, f, f.Cluster(name), g.LogLevel); !cmp.Equal(got, want) {
				t.Errorf("%s %s: %q, want %q", strings.Join(tt.flags, " "), name, got, want)
			}
		}
	}
}
