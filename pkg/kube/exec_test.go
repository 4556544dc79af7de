package kube

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
)

// TestKubectl: $KUBECTL, else kubectl on PATH, else an error that says
// both.
func TestKubectl(t *testing.T) {
	t.Setenv("KUBECTL", "/opt/kubectl")
	if got, err := Kubectl(); got != "/opt/kubectl" || err != nil {
		t.Errorf("$KUBECTL: %q, %v", got, err)
	}
	t.Setenv("KUBECTL", "")
	t.Setenv("PATH", t.TempDir())
	if _, err := Kubectl(); err == nil || !strings.HasPrefix(err.Error(), "kubectl not found on PATH (or set $KUBECTL): ") {
		t.Errorf("no kubectl: %v", err)
	}
}

// movedCluster connects to every cluster but moved, whose identity pins
// fail.
type movedCluster struct{ moved string }

func (m movedCluster) Connect(_ context.Context, _ *fleet.Fleet, c *fleet.Cluster) (*Client, error) {
	if c.Name == m.moved {
		return nil, errors.New("the pinned uid differs")
	}
	return nil, nil
}

// TestExecRun: kubectl runs once per cluster with its own flags, then
// the user's arguments, each line prefixed (a last one without a
// newline too) with its cluster and the two
// streams apart; a failed command is "exit status N"; a cluster that
// fails its connection never runs it; a delivered cluster's kubectl
// reaches it through a kubeconfig that reads only, unless AllowWrites.
func TestExecRun(t *testing.T) {
	dir := t.TempDir()
	kubectl := filepath.Join(dir, "kubectl")
	script := "#!/bin/sh\necho \"args: $*\"\necho oops >&2\nprintf 'no newline'\ncase \"$*\" in *ctx-b*) exit 3;; esac\n"
	if err := os.WriteFile(kubectl, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: k, cluster: {server: \"https://127.0.0.1:1\"}}]\nusers: [{name: u, user: {}}]\ncontexts: [{name: ctx-e, context: {cluster: k, user: u}}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := fleet.Parse([]byte(`apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: f}
groups: [{name: g}, {name: d, delivery: {oci: "oci://registry.example.com/f"}}]
clusters:
  - {name: a, group: g, context: ctx-a}
  - {name: b, group: g, context: ctx-b}
  - {name: c, group: g, context: ctx-c}
  - {name: e, group: d, context: ctx-e}
`), "fleet.yaml", dir)
	if err != nil {
		t.Fatal(err)
	}
	cf := NewConfigFlags()
	cf.KubeConfig = &kc
	sources := &KubeconfigSources{}
	defer sources.Cleanup()
	for _, allowWrites := range []bool{false, true} {
		var stdout, stderr bytes.Buffer
		e := Exec{Kubectl: kubectl, Args: []string{"get", "pods"}, Flags: cf, Sources: sources, AllowWrites: allowWrites, Parallel: 2,
			Prefix: output.NewPrefixer([]string{"a", "b", "c", "e"}, false), Stdout: &stdout, Stderr: &stderr}
		var got []string
		all := []*fleet.Cluster{f.Cluster("a"), f.Cluster("b"), f.Cluster("c"), f.Cluster("e")}
		for _, oc := range e.Run(context.Background(), movedCluster{moved: "c"}, f, all) {
			got = append(got, oc.Cluster+": "+errString(oc.Err))
		}
		if want := "a: ,b: exit status 3,c: the pinned uid differs,e: "; strings.Join(got, ",") != want {
			t.Errorf("allow writes %v: outcomes %q, want %q", allowWrites, strings.Join(got, ","), want)
		}
		for _, want := range []string{"[a] args: --context ctx-a --kubeconfig " + kc + " get pods\n", "[a] no newline\n", "[b] args: --context ctx-b --kubeconfig " + kc + " get pods\n"} {
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
			}
		}
		delivered := "[e] args: --context ctx-e --kubeconfig " + kc + " get pods\n"
		if !allowWrites {
			if sources.folder == nil {
				t.Fatal("no read-only kubeconfig written for the delivered cluster")
			}
			delivered = "[e] args: --kubeconfig " + sources.folder.path
		}
		if !strings.Contains(stdout.String(), delivered) || strings.Contains(stdout.String(), "[c]") {
			t.Errorf("allow writes %v: stdout lacks %q, or c ran:\n%s", allowWrites, delivered, stdout.String())
		}
		if strings.Count(stderr.String(), "oops\n") != 3 || strings.Contains(stdout.String(), "oops") {
			t.Errorf("standard error:\n%s", stderr.String())
		}
	}
}
