package kube

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
)

// secretToken is the credential of testKubeconfig; no error may hold it.
const secretToken = "zq-kubeconfigfrom-token-0123456789abcdef"

const testKubeconfig = `apiVersion: v1
kind: Config
clusters:
  - name: k
    cluster: {server: "https://127.0.0.1:1", certificate-authority: ca.crt}
users: [{name: u, user: {token: ` + secretToken + `}}]
contexts: [{name: from-secret, context: {cluster: k, user: u}}]
`

// fromFleet parses a fleet file whose clusters (name: kubeconfigFrom in
// flow style) use the context from-secret.
func fromFleet(t *testing.T, dir string, clusters ...[2]string) *fleet.Fleet {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: fleet/v1alpha1\nkind: Fleet\nmetadata: {name: f}\ngroups: [{name: g}]\nclusters:\n")
	for i, c := range clusters {
		// Every entry reaches the one test server: on purpose.
		same := ""
		if i > 0 {
			same = ", sameClusterAs: " + clusters[0][0]
		}
		b.WriteString("  - {name: " + c[0] + ", group: g, context: from-secret, kubeconfigFrom: " + c[1] + same + "}\n")
	}
	f, err := fleet.Parse([]byte(b.String()), "fleet.yaml", dir)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// script writes an executable shell script into dir.
func script(t *testing.T, dir, name, body string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("kubeconfigFrom command tests use a shell script")
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestResolveKubeconfigFrom(t *testing.T) {
	dir := t.TempDir()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where the temporary kubeconfigs go
	t.Setenv("PLAIN_KUBECONFIG", testKubeconfig)
	t.Setenv("B64_KUBECONFIG", base64.StdEncoding.EncodeToString([]byte(testKubeconfig)))
	// Wrapped at 76 columns, as base64(1) does.
	wrapped := base64.StdEncoding.EncodeToString([]byte(testKubeconfig))
	for i := 76; i < len(wrapped); i += 77 {
		wrapped = wrapped[:i] + "\n" + wrapped[i:]
	}
	t.Setenv("WRAPPED_KUBECONFIG", wrapped)
	// The command counts its runs, prints what it was given on stdin
	// (nothing: stdin is not the plugin's), and the kubeconfig.
	script(t, dir, "kc.sh", `echo run >> runs; cat >> stdin; pwd > pwd; printf '%s' "$KC"`)
	t.Setenv("KC", testKubeconfig)
	f := fromFleet(t, dir,
		[2]string{"plain", "{env: PLAIN_KUBECONFIG}"},
		[2]string{"b64", "{env: B64_KUBECONFIG}"},
		[2]string{"wrapped", "{env: WRAPPED_KUBECONFIG}"},
		[2]string{"cmd-a", "{command: [./kc.sh]}"},
		[2]string{"cmd-b", "{command: [./kc.sh]}"},
		[2]string{"plain-again", "{env: PLAIN_KUBECONFIG}"},
	)
	clusters := clustersOf(f)
	var s KubeconfigSources
	// First some clusters (cmd-a, not cmd-b), then all, then all again:
	// no source is read twice.
	if err := s.Resolve(context.Background(), f, clusters[:4]); err != nil {
		t.Fatal(err)
	}
	if err := s.Resolve(context.Background(), f, clusters); err != nil {
		t.Fatal(err)
	}
	if err := s.Resolve(context.Background(), f, clusters); err != nil {
		t.Fatal(err)
	}
	paths := map[string]bool{}
	for _, c := range clusters {
		p := KubeconfigPath(nil, f, c)
		paths[p] = true
		if !strings.HasPrefix(p, tmp) {
			t.Errorf("%s: kubeconfig %s is not a temporary file", c.Name, p)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", c.Name, fi.Mode().Perm())
		}
		if fi, err := os.Stat(filepath.Dir(p)); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: folder mode %v (%v), want 0700", c.Name, fi.Mode().Perm(), err)
		}
		cfg, err := clientcmd.LoadFromFile(p)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if cfg.AuthInfos["u"].Token != secretToken || cfg.Contexts["from-secret"] == nil {
			t.Errorf("%s: the file does not hold the kubeconfig", c.Name)
		}
		// A relative file reference resolves from the fleet file's folder.
		if got, want := cfg.Clusters["k"].CertificateAuthority, filepath.Join(dir, "ca.crt"); got != want {
			t.Errorf("%s: certificate-authority %s, want %s", c.Name, got, want)
		}
		if got := KubeconfigSource(nil, f, c); strings.HasPrefix(got, tmp) || (!strings.HasPrefix(got, "env:") && got != "command:./kc.sh") {
			t.Errorf("%s: KubeconfigSource = %q, want the source", c.Name, got)
		}
	}
	// One file per source: plain, b64, wrapped, the command.
	if len(paths) != 4 {
		t.Errorf("%d files for 4 sources: %v", len(paths), paths)
	}
	for file, want := range map[string]string{"runs": "run\n", "stdin": "", "pwd": dir + "\n"} {
		got, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("command's %s: %q, want %q", file, got, want)
		}
	}
	if err := CheckContexts(nil, &Kubeconfigs{}, f, clusters); err != nil {
		t.Errorf("CheckContexts after Resolve: %v", err)
	}
	s.Cleanup()
	for p := range paths {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s left after Cleanup (%v)", p, err)
		}
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Errorf("left in the temporary folder after Cleanup: %v", entries)
	}
	// After Cleanup nothing more is written.
	g := fromFleet(t, dir, [2]string{"late", "{env: B64_KUBECONFIG}"})
	var late KubeconfigSources
	late.Cleanup()
	if err := late.Resolve(context.Background(), g, clustersOf(g)); err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Errorf("Resolve after Cleanup: %v", err)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Errorf("written after Cleanup: %v", entries)
	}
}

func TestResolveKubeconfigFromFailures(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", t.TempDir())
	t.Setenv("GARBAGE", "not: [a kubeconfig")
	t.Setenv("NO_CONTEXTS", "apiVersion: v1\nkind: Config\n")
	t.Setenv("EMPTY", " \n")
	t.Setenv("NOT_SET_"+strings.ToUpper(t.Name()), "")
	os.Unsetenv("NOT_SET_" + strings.ToUpper(t.Name()))
	script(t, dir, "fail.sh", `echo "calling vault with token: `+secretToken+`" >&2; echo "Authorization: Bearer `+secretToken+`" >&2; echo "permission denied" >&2; printf '%s' "$KC"; exit 2`)
	script(t, dir, "garbage.sh", `echo hello`)
	script(t, dir, "slow.sh", `sleep 5; printf '%s' "$KC"`)
	t.Setenv("KC", testKubeconfig)
	for _, tt := range []struct {
		name, from, want string
	}{
		{"unset", "{env: NOT_SET_" + strings.ToUpper(t.Name()) + "}", "cluster unset: kubeconfigFrom.env NOT_SET_" + strings.ToUpper(t.Name()) + " is not set"},
		{"empty", "{env: EMPTY}", "cluster empty: kubeconfigFrom.env EMPTY is empty"},
		{"garbage", "{env: GARBAGE}", "cluster garbage: kubeconfigFrom.env GARBAGE is neither a kubeconfig (with at least one context) nor base64 of one"},
		{"no-contexts", "{env: NO_CONTEXTS}", "cluster no-contexts: kubeconfigFrom.env NO_CONTEXTS is neither a kubeconfig"},
		{"fails", "{command: [./fail.sh, --flag]}", "cluster fails: kubeconfigFrom.command ./fail.sh: exit status 2: calling vault with token: " + Redacted + "; Authorization: Bearer " + Redacted + "; permission denied"},
		{"garbage-out", "{command: [./garbage.sh]}", "cluster garbage-out: kubeconfigFrom.command ./garbage.sh is neither a kubeconfig"},
		{"missing", "{command: [kubectl-fleet-no-such-program]}", `cluster missing: kubeconfigFrom.command kubectl-fleet-no-such-program: exec: "kubectl-fleet-no-such-program": executable file not found`},
		{"slow", "{command: [./slow.sh]}", "cluster slow: kubeconfigFrom.command ./slow.sh: did not finish within 200ms"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := fromFleet(t, dir, [2]string{tt.name, tt.from})
			s := KubeconfigSources{Timeout: 200 * time.Millisecond}
			defer s.Cleanup()
			start := time.Now()
			err := s.Resolve(context.Background(), f, clustersOf(f))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("error:\n got %v\nwant %s…", err, tt.want)
			}
			if strings.Contains(err.Error(), secretToken) {
				t.Errorf("the error holds the token: %v", err)
			}
			if time.Since(start) > 4*time.Second {
				t.Errorf("took %s: the timeout did not stop the command", time.Since(start))
			}
			if c := f.Clusters[0]; c.ResolvedKubeconfig != "" {
				t.Errorf("resolved to %s despite the error", c.ResolvedKubeconfig)
			}
			// An unresolved cluster must not fall back to another kubeconfig.
			if _, err := (&Kubeconfigs{}).Load(KubeconfigPath(nil, f, &f.Clusters[0])); err == nil {
				t.Errorf("an unresolved kubeconfigFrom loads: %s", KubeconfigPath(nil, f, &f.Clusters[0]))
			}
		})
	}
	// Two clusters on one failing source: one run, one error naming both.
	f := fromFleet(t, dir, [2]string{"a", "{env: GARBAGE}"}, [2]string{"b", "{env: GARBAGE}"})
	var s KubeconfigSources
	if err := s.Resolve(context.Background(), f, clustersOf(f)); err == nil || !strings.HasPrefix(err.Error(), "clusters a, b: kubeconfigFrom.env GARBAGE is neither") || strings.Count(err.Error(), "\n") != 0 {
		t.Errorf("shared source: %v", err)
	}
}

// TestKubeconfigSourcesRefresh: after Refresh a source is read again (a
// rotated credential), and the files written before are gone.
func TestKubeconfigSourcesRefresh(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", t.TempDir())
	t.Setenv("ROTATED_KUBECONFIG", testKubeconfig)
	var s KubeconfigSources
	defer s.Cleanup()
	resolve := func() string {
		t.Helper()
		f := fromFleet(t, dir, [2]string{"c", "{env: ROTATED_KUBECONFIG}"})
		if err := s.Resolve(context.Background(), f, clustersOf(f)); err != nil {
			t.Fatal(err)
		}
		return KubeconfigPath(nil, f, clustersOf(f)[0])
	}
	first := resolve()
	t.Setenv("ROTATED_KUBECONFIG", strings.ReplaceAll(testKubeconfig, secretToken, "rotated-token"))
	if again := resolve(); again != first {
		t.Fatalf("resolved again without Refresh: %s, then %s", first, again)
	}
	s.Refresh()
	if _, err := os.Stat(first); !os.IsNotExist(err) {
		t.Errorf("the old kubeconfig is still there after Refresh: %v", err)
	}
	second := resolve()
	cfg, err := clientcmd.LoadFromFile(second)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.AuthInfos["u"].Token; got != "rotated-token" {
		t.Errorf("after Refresh the token is %q, want the rotated one", got)
	}
}
