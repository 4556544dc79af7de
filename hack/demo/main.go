// Command demo starts four local clusters (contexts fleet-c1..fleet-c4, the
// ones examples/fleet.yaml and examples/edge.yaml name; each full, with a
// fake node), a registry on 127.0.0.1:5310 and Flux on fleet-c4, runs
// kubectl fleet on the example fleet, then on its edge (a cluster that
// pulls through Flux), through the real kubectl, and stops everything,
// also on failure or Ctrl-C. Run it with `make demo`; with -up (`make
// up`) it instead keeps them running until Ctrl-C, for trying by hand.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/kubectl-fleet/kubectl-fleet/internal/testenv"
)

// registry is where examples/edge.yaml publishes.
const registry = "127.0.0.1:5310"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	up := flag.Bool("up", false, "keep the clusters up until Ctrl-C instead of running the demo")
	flag.Parse()
	if flag.NArg() != 4 {
		return fmt.Errorf("usage: demo [-up] CONTROL_PLANE_BIN_DIR KWOK_STAGES_DIR FLUX_CRDS_DIR PLUGIN_BIN_DIR")
	}
	binDir, stages, crds, pluginDir := flag.Arg(0), flag.Arg(1), flag.Arg(2), flag.Arg(3)
	work, err := os.MkdirTemp("", "fleet-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	fmt.Println("# starting 4 local clusters (one etcd, four kube-apiservers on loopback)")
	env, err := testenv.Start(ctx, testenv.Options{BinDir: binDir, Clusters: 4, Full: 4, KwokStages: filepath.Join(stages, "fast.yaml"), Dir: filepath.Join(work, "clusters")})
	if err != nil {
		return err
	}
	defer func() {
		env.Stop()
		fmt.Println("# clusters stopped")
	}()
	// The edge's registry and the Flux that edge-1 (fleet-c4) runs.
	reg, err := testenv.StartRegistry(registry, nil)
	if err != nil {
		return err
	}
	defer reg.Stop()
	if _, err := env.StartFlux(ctx, "fleet-c4", testenv.FluxOptions{BinDir: binDir, CRDs: crds, Namespace: "flux-system"}); err != nil {
		return err
	}
	fmt.Printf("# a registry on %s, Flux on fleet-c4 (the edge's)\n", registry)

	// The example fleet's one encrypted file is encrypted for this demo
	// key, committed for the demo only.
	demoKey, err := filepath.Abs(filepath.Join("examples", "demo-age-key.txt"))
	if err != nil {
		return err
	}
	if *up {
		fmt.Printf("# clusters up (and the edge's registry and Flux); in another shell:\nexport KUBECONFIG=%s PATH=%s:%s:$PATH SOPS_AGE_KEY_FILE=%s\n# Ctrl-C stops them\n", env.Kubeconfig, pluginDir, binDir, demoKey)
		<-ctx.Done()
		return nil
	}
	path := pluginDir + string(os.PathListSeparator) + binDir + string(os.PathListSeparator) + os.Getenv("PATH")
	for _, st := range steps(filepath.Join(work, "flux")) {
		fmt.Printf("\n$ kubectl %s\n", strings.Join(st.args, " "))
		cmd := exec.CommandContext(ctx, filepath.Join(binDir, "kubectl"), st.args...)
		cmd.Dir = "examples"
		cmd.Env = append(os.Environ(), "PATH="+path, "KUBECONFIG="+env.Kubeconfig, "SOPS_AGE_KEY_FILE="+demoKey)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		err := cmd.Run()
		if code := cmd.ProcessState.ExitCode(); !slices.Contains(st.ok, code) {
			return fmt.Errorf("kubectl %s: exit %d: %v", strings.Join(st.args, " "), code, err)
		}
	}
	return nil
}

// step is one command of the demo and the exit codes it is expected to
// end with.
type step struct {
	args []string
	ok   []int
}

// steps are the demo's commands, in order; flux is where bootstrap
// writes the edge's Flux objects.
func steps(flux string) []step {
	return []step{
		{[]string{"fleet", "clusters", "--check"}, []int{0}},
		{[]string{"fleet", "vet"}, []int{0}},
		{[]string{"fleet", "render", "--cluster", "prod-us", "--app", "dashboard", "-o", "json"}, []int{0}},
		{[]string{"fleet", "diff", "--group", "staging"}, []int{1}}, // 1: differences
		{[]string{"fleet", "apply", "--group", "staging", "--wait", "--timeout", "2m"}, []int{0}},
		{[]string{"fleet", "vet"}, []int{0}},                       // the rollout's steps: staging, production/canary, production/rest
		{[]string{"fleet", "apply", "--prune", "--yes"}, []int{4}}, // 4: production awaits approval
		// alice approves, with her key: not the identity that applies.
		{[]string{"fleet", "approve", "--group", "production", "--key", "demo-approver-key.pem", "--as", "alice", "--as-group", "system:masters"}, []int{0}},
		{[]string{"fleet", "apply", "--prune", "--yes"}, []int{0}},
		{[]string{"fleet", "diff"}, []int{0}}, // 0: nothing left to change
		// The Secret decrypted from apps/dashboard/credentials.json (SOPS).
		{[]string{"get", "secret", "dashboard-credentials", "-n", "dashboard", "--context", "fleet-c2", "-o", "go-template={{.data.username | base64decode}}{{\"\\n\"}}"}, []int{0}},
		{[]string{"fleet", "status"}, []int{0}},
		{[]string{"fleet", "history"}, []int{0}},
		// The edge: edge-1 pulls. Its Flux objects are applied once, with
		// its admin rights; then apply publishes and reads back what Flux
		// applied, through a context it only reads with.
		{[]string{"fleet", "vet", "-F", "edge.yaml"}, []int{0}},
		{[]string{"fleet", "bootstrap", "-F", "edge.yaml", "--output-dir", flux}, []int{0}},
		{[]string{"apply", "--context", "fleet-c4", "-f", flux}, []int{0}},
		{[]string{"fleet", "apply", "-F", "edge.yaml", "--dry-run=server"}, []int{0}}, // would publish …, with the digests
		{[]string{"fleet", "apply", "-F", "edge.yaml", "--yes"}, []int{0}},
		{[]string{"fleet", "status", "-F", "edge.yaml"}, []int{0}},
		{[]string{"fleet", "history", "-F", "edge.yaml"}, []int{0}},
	}
}
