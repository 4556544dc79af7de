package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/testenv"
)

// BenchmarkApply100Objects applies 100 objects to one cluster 50ms of round
// trip away (the latency proxy), with kubectl fleet and with
// `kubectl apply --server-side`, both started through kubectl as users do.
// Each iteration creates 100 new ConfigMaps in a namespace of its own; the
// -noop ones apply 100 objects that are already there, unchanged (kubectl
// fleet then sends none of them again).
func BenchmarkApply100Objects(b *testing.B) {
	far, err := testenv.Start(b.Context(), testenv.Options{BinDir: binDir, Clusters: 1, ContextPrefix: "far-c", Dir: b.TempDir(), Latency: 25 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	defer far.Stop()
	dir := b.TempDir()
	fleetFile := filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(fleetFile, []byte("apiVersion: fleet/v1alpha1\nkind: Fleet\nmetadata: {name: bench}\ngroups: [{name: g}]\nclusters: [{name: far, group: g, context: far-c1}]\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	manifests := func(tool string, i int) string {
		d := filepath.Join(dir, fmt.Sprintf("%s-%d", tool, i))
		ns := fmt.Sprintf("bench-%s-%d", tool, i)
		var sb strings.Builder
		fmt.Fprintf(&sb, "apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n", ns)
		for j := 0; j < 99; j++ {
			fmt.Fprintf(&sb, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%02d, namespace: %s}\ndata: {n: \"%d\"}\n", j, ns, j)
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "all.yaml"), []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
		return d
	}
	run := func(b *testing.B, args ...string) {
		b.Helper()
		cmd := kubectlCmd(append(args, "--kubeconfig", far.Kubeconfig)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	b.Run("fleet", func(b *testing.B) {
		i := 0
		for b.Loop() {
			b.StopTimer()
			d := manifests("fleet", i)
			i++
			b.StartTimer()
			run(b, "fleet", "apply", "-F", fleetFile, "-f", d, "--name", filepath.Base(d))
		}
	})
	b.Run("kubectl", func(b *testing.B) {
		i := 0
		for b.Loop() {
			b.StopTimer()
			d := manifests("kubectl", i)
			i++
			b.StartTimer()
			run(b, "apply", "--server-side", "--context", "far-c1", "-f", d)
		}
	})
	noop := func(tool string, args ...string) func(b *testing.B) {
		return func(b *testing.B) {
			d := manifests(tool, 0)
			args := append(args, d)
			run(b, args...) // the first apply creates them
			for b.Loop() {
				run(b, args...)
			}
		}
	}
	b.Run("fleet-noop", noop("fleetnoop", "fleet", "apply", "-F", fleetFile, "--name", "fleetnoop", "-f"))
	b.Run("kubectl-noop", noop("kubectlnoop", "apply", "--server-side", "--context", "far-c1", "-f"))
}
