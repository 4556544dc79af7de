package cmd

import (
	"context"
	"encoding/base64"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/exit"
)

const kubeconfigFromFleet = `apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: from}
defaults:
  kubeconfigFrom: {env: FROM_ENV}
groups: [{name: g}]
clusters:
  - {name: by-env, group: g, context: from-secret}
  - {name: by-command, group: g, context: from-secret, kubeconfigFrom: {command: [./kc.sh]}, sameClusterAs: by-env}
  - {name: by-command-too, group: g, context: from-secret, kubeconfigFrom: {command: [./kc.sh]}, sameClusterAs: by-env}
  - {name: by-file, group: g, context: fleet-c1, kubeconfig: ` + "%s" + `, sameClusterAs: by-env}
apps: [{name: cm, manifests: cm.yaml}]
`

const fromToken = "zq-cmd-kubeconfigfrom-token-42"

const fromKubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: k, cluster: {server: "https://127.0.0.1:16441"}}]
users: [{name: u, user: {token: ` + fromToken + `}}]
contexts: [{name: from-secret, context: {cluster: k, user: u}}]
`

// TestKubeconfigFromOnlyWhenNeeded: render, a clusters listing and vet
// --no-kubeconfig read no kubeconfigFrom; vet does, each source once, and
// removes the temporary files when done.
func TestKubeconfigFromOnlyWhenNeeded(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the command is a shell script")
	}
	dir := t.TempDir()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	kc, _ := filepath.Abs(filepath.Join("testdata", "kubeconfig"))
	files := map[string]string{
		"fleet.yaml": strings.Replace(kubeconfigFromFleet, "%s", kc, 1),
		"cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: default}\n",
		"kc.sh":      "#!/bin/sh\necho run >> runs\nprintf '%s' \"$KC\"\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("KC", fromKubeconfig)
	encoded := base64.StdEncoding.EncodeToString([]byte(fromKubeconfig))
	t.Setenv("FROM_ENV", encoded)
	fleetFile := filepath.Join(dir, "fleet.yaml")
	runs := func() int {
		b, _ := os.ReadFile(filepath.Join(dir, "runs"))
		return strings.Count(string(b), "run")
	}
	check := func(name, out, errOut string) {
		t.Helper()
		if strings.Contains(out+errOut, fromToken) || strings.Contains(out+errOut, encoded) {
			t.Errorf("%s printed the kubeconfig:\n%s%s", name, out, errOut)
		}
		if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
			t.Errorf("%s left temporary files: %v", name, entries)
		}
	}

	for _, args := range [][]string{{"render"}, {"clusters"}, {"clusters", "-o", "json"}, {"vet", "--no-kubeconfig"}} {
		out, errOut, code := run(t, "", append(args, "-F", fleetFile)...)
		if code != 0 || runs() != 0 {
			t.Fatalf("%v: exit %d, %d command runs, want none:\n%s%s", args, code, runs(), out, errOut)
		}
		check(strings.Join(args, " "), out, errOut)
		switch strings.Join(args, " ") {
		case "clusters":
			if !strings.Contains(out, "<kubeconfigFrom command:./kc.sh>") || !strings.Contains(out, "<kubeconfigFrom env:FROM_ENV>") || !strings.Contains(out, "https://127.0.0.1:16441") {
				t.Errorf("clusters does not name the sources:\n%s", out)
			}
		case "clusters -o json":
			if !strings.Contains(out, `"kubeconfig":"env:FROM_ENV"`) || !strings.Contains(out, `"kubeconfig":"command:./kc.sh"`) {
				t.Errorf("clusters -o json does not name the sources:\n%s", out)
			}
		}
	}

	out, errOut, code := run(t, "", "vet", "-F", fleetFile)
	if code != 0 || runs() != 1 || !strings.Contains(out, "vet: 4 clusters ok") {
		t.Fatalf("vet: exit %d, %d command runs, want 1:\n%s%s", code, runs(), out, errOut)
	}
	check("vet", out, errOut)

	// A context the kubeconfigFrom does not have is named by its source.
	os.Setenv("FROM_ENV", strings.ReplaceAll(fromKubeconfig, "from-secret", "other"))
	out, errOut, code = run(t, "", "vet", "-F", fleetFile)
	if code != 1 || !strings.Contains(out, `fleet.yaml:8: cluster by-env: context: context "from-secret" not found in kubeconfig env:FROM_ENV`) {
		t.Errorf("vet with the wrong kubeconfig: exit %d:\n%s%s", code, out, errOut)
	}
	check("vet", out, errOut)

	os.Unsetenv("FROM_ENV")
	out, errOut, code = run(t, "", "vet", "-F", fleetFile)
	if code != 1 || !strings.Contains(out, "cluster by-env: kubeconfigFrom.env FROM_ENV is not set") {
		t.Errorf("vet without the variable: exit %d:\n%s%s", code, out, errOut)
	}
	check("vet", out, errOut)
	// The commands that talk to clusters fail before any request.
	for _, args := range [][]string{{"diff"}, {"apply", "--yes"}, {"status"}, {"delete", "--yes"}, {"exec", "--", "get", "ns"}, {"clusters", "--check"}} {
		out, errOut, code = run(t, "", append([]string{args[0], "-F", fleetFile}, args[1:]...)...)
		if code == 0 || !strings.Contains(errOut, "cluster by-env: kubeconfigFrom.env FROM_ENV is not set") {
			t.Errorf("%v without the variable: exit %d:\n%s%s", args, code, out, errOut)
		}
		check(strings.Join(args, " "), out, errOut)
	}
}

// TestSecondInterruptCleansUp: the second Ctrl-C, which ends the process
// at once, removes the temporary kubeconfigs first.
func TestSecondInterruptCleansUp(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("signals")
	}
	if os.Getenv("KUBECTL_FLEET_TEST_INTERRUPT") != "" {
		// The child: the first Ctrl-C happened (ctx is done); the next
		// ones come until the process ends. It makes no t.TempDir: its
		// os.Exit would leave it behind.
		keep := make(chan os.Signal, 1)
		signal.Notify(keep, os.Interrupt) // the default action would end the process
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		exitOnSecondInterrupt(ctx, io.Discard, func() { _ = os.WriteFile(os.Getenv("KUBECTL_FLEET_TEST_INTERRUPT"), nil, 0o600) })
		for {
			_ = syscall.Kill(os.Getpid(), syscall.SIGINT)
			time.Sleep(20 * time.Millisecond)
		}
	}
	marker := filepath.Join(t.TempDir(), "cleaned")
	cmd := exec.Command(os.Args[0], "-test.run=^TestSecondInterruptCleansUp$")
	cmd.Env = append(os.Environ(), "KUBECTL_FLEET_TEST_INTERRUPT="+marker)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exit.Interrupted {
		t.Fatalf("child: %v, want exit %d:\n%s", err, exit.Interrupted, out)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("cleanup did not run before the exit: %v", err)
	}
}
