package cmd

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
)

// A flag a command accepts takes effect, or the command refuses it and
// says why; so do kubectl's flags that kubectl fleet leaves out.
func TestFlagsRefused(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"clusters", "-n", "web"}, "-n/--namespace does not apply to clusters, which lists clusters, not objects"},
		{[]string{"clusters", "--check", "--cache-dir", "/tmp/c"}, "--cache-dir does not apply to clusters, which caches no discovery"},
		{[]string{"clusters", "--as", "jane"}, "--as only works with --check: without it no cluster is contacted"},
		{[]string{"--as-group", "ops", "clusters"}, "--as-group only works with --check"},
		{[]string{"clusters", "--request-timeout", "5s"}, "--request-timeout only works with --check"},
		{[]string{"vet", "--as-uid", "42"}, "--as-uid only works with --server: without it nothing is sent to any cluster"},
		{[]string{"vet", "--no-kubeconfig", "--kubeconfig", "kc"}, "--kubeconfig does not go with --no-kubeconfig"},
		{[]string{"render", "--context", "prod"}, "unknown flag: --context: each cluster uses the context its fleet file entry names; select clusters by context with --kube-context"},
		{[]string{"diff", "--server=https://x"}, "unknown flag: --server: kubectl fleet does not take it, since one value would point every cluster at the same server or credential"},
		{[]string{"apply", "-s", "https://x"}, "unknown shorthand flag: 's' in -s: kubectl fleet does not take it"},
		{[]string{"exec", "--token", "t", "--", "get", "pods"}, "unknown flag: --token: kubectl fleet does not take it"},
		{[]string{"status", "--user", "u"}, "unknown flag: --user: kubectl fleet does not take it"},
		{[]string{"status", "-v"}, "flag needs an argument: 'v' in -v: -v is the log level, as kubectl's (-v=6 shows requests); status lists every object with -o wide or --verbose"},
		{[]string{"status", "-v", "wide"}, `invalid argument "wide" for "-v, --v" flag`},
		{[]string{"status", "-o", "yaml"}, `--output "yaml": want json or wide`},
		{[]string{"exec", "--", "get", "pods", "--context", "prod"}, "--context after --: kubectl fleet gives each cluster's kubectl its own; select clusters with"},
		{[]string{"exec", "--", "--kubeconfig=/kc", "get", "pods"}, "--kubeconfig after --: kubectl fleet gives each cluster's kubectl its own"},
		{[]string{"exec", "--", "get", "pods", "--cluster", "prod-eu"}, "--cluster after -- is kubectl's, a kubeconfig cluster for every cluster's kubectl; select fleet clusters with -c/--cluster before --"},
		{[]string{"exec", "--", "get", "pods", "-shttps://x"}, "--server/-s after -- would point every cluster's kubectl at one server"},
		{[]string{"history", "-n", "web"}, "-n/--namespace does not apply to history, which lists revisions, not objects"},
		{[]string{"rollback", "-n", "web", "--app", "web"}, "-n/--namespace does not apply to rollback, which re-applies the objects as they were stored"},
		{[]string{"render", "--revision", "2", "--app", "web", "-n", "web"}, "-n/--namespace does not go with --revision"},
		{[]string{"rollback", "--to-revision", "3"}, "--to-revision 3 needs exactly one --app: revision numbers are per app"},
		{[]string{"rollback", "--app", "web", "--history-limit", "-1"}, "--history-limit must be 0 (keep all) or more"},
		{[]string{"apply", "--history-limit", "-2"}, "--history-limit must be 0 (keep all) or more"},
		{[]string{"render", "--revision", "2"}, "--revision N prints a stored revision of one app: give it a positive N and exactly one --app, and no -k, -j or -f"},
		{[]string{"render", "--revision", "2", "--app", "web", "-k", "."}, "--revision N prints a stored revision of one app"},
		{[]string{"history", "-o", "wide"}, `--output "wide": want json or yaml`},
	}
	// Should a refusal go missing, exec runs no real kubectl.
	t.Setenv("KUBECTL", "false")
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, errOut, code := run(t, "", append([]string{"-F", example}, tt.args...)...)
			if code != 1 || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %q, want %q", code, errOut, tt.want)
			}
			if out != "" {
				t.Errorf("stdout: %s", out)
			}
		})
	}
	// The same flags where they take effect are accepted.
	for _, args := range [][]string{
		{"clusters", "--no-color"},
		{"vet", "--no-kubeconfig", "-n", "web"},
		{"render", "--as", "jane", "--request-timeout", "5s", "--cache-dir", t.TempDir(), "--v", "1"},
	} {
		if _, errOut, code := run(t, "", append([]string{"-F", example}, args...)...); code != 0 {
			t.Errorf("%s: exit %d: %s", strings.Join(args, " "), code, errOut)
		}
	}
}

// A check's kubeconfig acts as the user the command acts as: --as,
// --as-uid and --as-group reach it, as -n does.
func TestCheckKubeconfigImpersonates(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join("testdata", "kubeconfig"))
	f, err := fleet.Load(example)
	if err != nil {
		t.Fatal(err)
	}
	c := f.Cluster("prod-eu")
	for _, tt := range []struct {
		flags []string
		want  *clientcmdapi.AuthInfo
		ns    string
	}{
		{nil, &clientcmdapi.AuthInfo{Token: "do-not-print-this-token"}, ""},
		{[]string{"--as", "jane", "--as-uid", "42", "--as-group", "dev", "--as-group", "ops", "-n", "web"},
			&clientcmdapi.AuthInfo{Token: "do-not-print-this-token", Impersonate: "jane", ImpersonateUID: "42", ImpersonateGroups: []string{"dev", "ops"}}, "web"},
	} {
		g := &GlobalOptions{ConfigFlags: kube.NewConfigFlags()}
		t.Cleanup(g.sources.Cleanup) // as Execute does
		root := &cobra.Command{}
		g.addFlags(root)
		if err := root.PersistentFlags().Parse(tt.flags); err != nil {
			t.Fatal(err)
		}
		path, cleanup, err := kube.SingleContextKubeconfig(g.ConfigFlags, &g.sources, f, c)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := clientcmd.LoadFromFile(path)
		cleanup()
		if err != nil {
			t.Fatal(err)
		}
		ctx := cfg.Contexts[cfg.CurrentContext]
		user := cfg.AuthInfos[ctx.AuthInfo]
		user.LocationOfOrigin, user.Extensions = "", nil
		if diff := cmp.Diff(tt.want, user); diff != "" || ctx.Namespace != tt.ns {
			t.Errorf("%q: namespace %q, user (-want +got):\n%s", tt.flags, ctx.Namespace, diff)
		}
	}
}

// Among exec's kubectl arguments, the flags that would point a cluster's
// kubectl elsewhere are refused; a container's command after kubectl's own
// -- is not looked at.
func TestCheckKubectlArgs(t *testing.T) {
	for _, tt := range []struct {
		args []string
		bad  bool
	}{
		{[]string{"get", "pods", "-n", "web", "--as", "jane"}, false},
		{[]string{"create", "rolebinding", "r", "--clusterrole=view", "--user=jane"}, false},
		{[]string{"exec", "web-0", "--", "sh", "-c", "kubectl --context x get pods"}, false},
		{[]string{"exec", "web-0", "--", "--server", "-s"}, false},
		{[]string{"get", "pods", "--all-namespaces", "--selector=app=web"}, false},
		{[]string{"--context", "x", "get", "pods"}, true},
		{[]string{"get", "pods", "--context=x"}, true},
		{[]string{"get", "pods", "--kubeconfig", "/kc"}, true},
		{[]string{"get", "pods", "--cluster=c1"}, true},
		{[]string{"get", "pods", "--server", "https://x"}, true},
		{[]string{"get", "pods", "-s", "https://x"}, true},
		{[]string{"get", "pods", "-s=https://x"}, true},
	} {
		if err := kube.CheckKubectlArgs(tt.args); (err != nil) != tt.bad {
			t.Errorf("%q: %v, want refused %v", tt.args, err, tt.bad)
		}
	}
}
