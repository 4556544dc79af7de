// Package e2e runs kubectl fleet the way users do, through a real kubectl
// that finds the plugin on PATH, against real API servers started on
// loopback by internal/testenv.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/internal/testenv"
)

var (
	env     *testenv.Env
	repo    string
	binDir  string
	pathEnv string
	// kwokStages is the kwok stage configuration of full clusters.
	kwokStages string
	// stopping ends when the suite is interrupted (Ctrl-C, SIGTERM): a
	// test that starts clusters of its own stops them then.
	stopping context.Context
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	var err error
	if repo, err = filepath.Abs("../.."); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	work, err := os.MkdirTemp("", "fleet-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(work)
	// Discovery cached by kubectl and the plugin, a run's own: the
	// user's ~/.kube/cache holds earlier test beds' servers, keyed by
	// host and port, and a port used again read another server's kinds
	// (a CRD "served" that this API server never had: a 404, not "CRD
	// pending").
	if err := os.Setenv("KUBECACHEDIR", filepath.Join(work, "kube-cache")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	// The control plane: built from the Go module proxy when missing.
	build := exec.Command(filepath.Join(repo, "hack", "controlplane", "build.sh"), "etcd", "kube-apiserver", "kubectl", "kube-controller-manager", "kube-scheduler", "kwok", "krew", "helm")
	build.Stderr = os.Stderr
	out, err := build.Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "building the control plane:", err)
		return 1
	}
	binDir = strings.TrimSpace(string(out))
	// The machine's shared temporary folder as runs killed earlier leave
	// it (one of an earlier version, one of this one, whose owner is the
	// build that just ended): no test may see or count them.
	for _, pattern := range []string{"kubectl-fleet-kubeconfigs-*", fmt.Sprintf("kubectl-fleet-kubeconfigs-%d-*", build.Process.Pid)} {
		left, err := os.MkdirTemp("", pattern)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(left)
	}

	// The plugin, on PATH beside kubectl.
	pluginDir := filepath.Join(work, "bin")
	// Stamped with a version, as make build stamps one: a development
	// build ("dev") never skips an unchanged object.
	gobuild := exec.Command("go", "build", "-ldflags", "-X github.com/kubectl-fleet/kubectl-fleet/pkg/version.Version=v0.0.0-e2e", "-o", filepath.Join(pluginDir, "kubectl-fleet"), "./cmd/kubectl-fleet")
	gobuild.Dir, gobuild.Stdout, gobuild.Stderr = repo, os.Stderr, os.Stderr
	if err := gobuild.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building kubectl-fleet:", err)
		return 1
	}
	pathEnv = pluginDir + string(os.PathListSeparator) + binDir + string(os.PathListSeparator) + os.Getenv("PATH")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stopping = ctx
	stages, err := exec.Command(filepath.Join(repo, "hack", "controlplane", "build.sh"), "--print-stages-dir").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kwok stages:", err)
		return 1
	}
	kwokStages = filepath.Join(strings.TrimSpace(string(stages)), "fast.yaml")
	// Three clusters: fleet-c1 full (workloads become healthy), the others
	// API servers only.
	env, err = testenv.Start(ctx, testenv.Options{BinDir: binDir, Clusters: 3, Full: 1, KwokStages: kwokStages, Dir: filepath.Join(work, "clusters")})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting clusters:", err)
		return 1
	}
	defer env.Stop()
	go func() {
		<-ctx.Done() // Ctrl-C: stop the clusters even if a test hangs.
		env.Stop()
	}()
	return m.Run()
}

// kubectlCmd prepares the real kubectl with the test bed's kubeconfig,
// the plugin on PATH, and t's own folders (ownEnv).
func kubectlCmd(t *testing.T, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(binDir, "kubectl"), args...)
	cmd.Env = append(append(os.Environ(), ownEnv(t)...), "PATH="+pathEnv, "KUBECONFIG="+env.Kubeconfig, "NO_COLOR=1")
	return cmd
}

// owned holds each running test's own folders, by test.
var owned sync.Map // *testing.T → string

// ownFolder is a folder of t's own, made on first use: its tmp (the
// processes' TMPDIR) and home (their HOME and XDG folders).
func ownFolder(t *testing.T) string {
	if dir, ok := owned.Load(t); ok {
		return dir.(string)
	}
	dir := t.TempDir()
	for _, sub := range []string{"tmp", "home"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	owned.Store(t, dir)
	t.Cleanup(func() { owned.Delete(t) })
	return dir
}

// ownTemp is t's own temporary folder: every process the test starts has
// it as TMPDIR, so what the plugin leaves there (a killed run's
// kubeconfigs) is this test's, and nothing another run of the plugin
// left in the machine's shared one is seen.
func ownTemp(t *testing.T) string { return filepath.Join(ownFolder(t), "tmp") }

// ownEnv gives a process the plugin or kubectl runs as t's own temporary
// folder, home, caches and configuration (the plugin's OCI and chart
// caches, SOPS's age keys): nothing of the user's or of another test's.
func ownEnv(t *testing.T) []string {
	home := filepath.Join(ownFolder(t), "home")
	return []string{"TMPDIR=" + ownTemp(t), "HOME=" + home, "USERPROFILE=" + home,
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"), "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"LOCALAPPDATA=" + filepath.Join(home, "AppData", "Local"), "APPDATA=" + filepath.Join(home, "AppData", "Roaming")}
}

// kubectl runs the real kubectl with the test bed's kubeconfig and the
// plugin on PATH, and returns stdout, stderr and the exit code.
func kubectl(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	return runCmd(t, kubectlCmd(t, args...), stdin)
}

// runCmd runs a prepared command with stdin and returns stdout, stderr
// and the exit code; a command that could not run fails the test.
func runCmd(t *testing.T, cmd *exec.Cmd, stdin string) (string, string, int) {
	t.Helper()
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}
