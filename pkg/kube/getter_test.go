package kube

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// writeKubeconfig writes a kubeconfig of n contexts, ctx-i at
// https://host-i.example:6443 (server says which write it is).
func writeKubeconfig(t *testing.T, path string, n int, server string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Config\nclusters:\n")
	for i := range n {
		fmt.Fprintf(&b, "- name: c%d\n  cluster: {server: 'https://%s-%d.example:6443'}\n", i, server, i)
	}
	b.WriteString("users:\n- name: u\n  user: {token: s3cr3t}\ncontexts:\n")
	for i := range n {
		fmt.Fprintf(&b, "- name: ctx-%d\n  context: {cluster: c%d, user: u, namespace: ns-%d}\n", i, i, i)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

func flagsFor(path, context string) *genericclioptions.ConfigFlags {
	f := genericclioptions.NewConfigFlags(true)
	f.KubeConfig, f.Context = &path, &context
	return f
}

// The Getter gives what kubectl's ConfigFlags give for the flags
// ForCluster sets, reading each version of a kubeconfig once.
func TestGetterIsConfigFlagsParsedOnce(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config")
	writeKubeconfig(t, path, 50, "host")
	as, uid, timeout, ns := "alice", "u-1", "7s", "override"
	groups := []string{"devs", "ops"}
	for i, mod := range []func(f *genericclioptions.ConfigFlags){
		func(*genericclioptions.ConfigFlags) {},
		func(f *genericclioptions.ConfigFlags) {
			f.Impersonate, f.ImpersonateUID, f.ImpersonateGroup, f.Timeout, f.Namespace = &as, &uid, &groups, &timeout, &ns
		},
	} {
		for _, ctx := range []string{"ctx-0", "ctx-7", "ctx-49"} {
			want, got := flagsFor(path, ctx), flagsFor(path, ctx)
			mod(want)
			mod(got)
			wantCfg, err := want.ToRESTConfig()
			if err != nil {
				t.Fatal(err)
			}
			g := NewGetter(got)
			gotCfg, err := g.ToRESTConfig()
			if err != nil {
				t.Fatal(err)
			}
			if gotCfg.Host != wantCfg.Host || gotCfg.BearerToken != wantCfg.BearerToken || gotCfg.Timeout != wantCfg.Timeout || fmt.Sprint(gotCfg.Impersonate) != fmt.Sprint(wantCfg.Impersonate) {
				t.Errorf("case %d, %s: getter %s %v %s, ConfigFlags %s %v %s", i, ctx, gotCfg.Host, gotCfg.Impersonate, gotCfg.Timeout, wantCfg.Host, wantCfg.Impersonate, wantCfg.Timeout)
			}
			wantNS, _, _ := want.ToRawKubeConfigLoader().Namespace()
			gotNS, _, _ := g.ToRawKubeConfigLoader().Namespace()
			if gotNS != wantNS {
				t.Errorf("case %d, %s: namespace %q, ConfigFlags %q", i, ctx, gotNS, wantNS)
			}
		}
	}
	// Parsed once: every getter of this version shares one parse.
	first, _ := parsedKubeconfigs.load(rulesFor(path))
	for range 3 {
		if again, _ := parsedKubeconfigs.load(rulesFor(path)); again != first {
			t.Fatal("the same kubeconfig was parsed again")
		}
	}
	// A caller that changes its raw config does not change the others'.
	raw, err := NewGetter(flagsFor(path, "ctx-3")).ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		t.Fatal(err)
	}
	raw.CurrentContext = "ctx-3"
	if err := clientcmdapi.MinifyConfig(&raw); err != nil || len(raw.Contexts) != 1 {
		t.Fatalf("minify: %v, %d contexts", err, len(raw.Contexts))
	}
	if cfg, err := NewGetter(flagsFor(path, "ctx-4")).ToRESTConfig(); err != nil || cfg.Host != "https://host-4.example:6443" {
		t.Errorf("after another caller minified its copy: %v, %v", cfg, err)
	}
	// A replaced file (rotated credentials, the next reconcile pass) is
	// read again.
	time.Sleep(10 * time.Millisecond)
	writeKubeconfig(t, path, 50, "moved")
	if cfg, err := NewGetter(flagsFor(path, "ctx-7")).ToRESTConfig(); err != nil || cfg.Host != "https://moved-7.example:6443" {
		t.Errorf("after the kubeconfig changed: %v, %v", cfg, err)
	}
	// A kubeconfig that cannot be read is the client's error.
	if _, err := NewClient(flagsFor(filepath.Join(dir, "none"), "ctx-0")); err == nil || !strings.Contains(err.Error(), "none") {
		t.Errorf("missing kubeconfig: %v", err)
	}
	if _, err := NewGetter(flagsFor(path, "nope")).ToRESTConfig(); err == nil || !strings.Contains(err.Error(), `context "nope" does not exist`) {
		t.Errorf("missing context: %v", err)
	}
}
