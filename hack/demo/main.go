// Command demo starts three local clusters (contexts fleet-c1..fleet-c3, the
// ones examples/fleet.yaml names), runs kubectl fleet on the example fleet
// through the real kubectl, and stops the clusters, also on failure or
// Ctrl-C. Run it with `make demo`.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/testenv"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) != 3 {
		return fmt.Errorf("usage: demo CONTROL_PLANE_BIN_DIR PLUGIN_BIN_DIR")
	}
	binDir, pluginDir := os.Args[1], os.Args[2]
	work, err := os.MkdirTemp("", "fleet-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	fmt.Println("# starting 3 local clusters (one etcd, three kube-apiservers on loopback)")
	env, err := testenv.Start(ctx, testenv.Options{BinDir: binDir, Clusters: 3, Dir: filepath.Join(work, "clusters")})
	if err != nil {
		return err
	}
	defer func() {
		env.Stop()
		fmt.Println("# clusters stopped")
	}()

	path := pluginDir + string(os.PathListSeparator) + binDir + string(os.PathListSeparator) + os.Getenv("PATH")
	for _, args := range [][]string{
		{"fleet", "clusters", "--check"},
		{"fleet", "vet"},
		{"fleet", "render", "--group", "staging", "--app", "web"},
		{"fleet", "render", "--cluster", "prod-us", "--app", "dashboard", "-o", "json"},
	} {
		fmt.Printf("\n$ kubectl %s\n", strings.Join(args, " "))
		cmd := exec.CommandContext(ctx, filepath.Join(binDir, "kubectl"), args...)
		cmd.Dir = "examples"
		cmd.Env = append(os.Environ(), "PATH="+path, "KUBECONFIG="+env.Kubeconfig)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("kubectl %s: %w", strings.Join(args, " "), err)
		}
	}
	return nil
}
