package kube

import (
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TestDefaultRequestTimeout: without --request-timeout, or with 0, every
// request of a cluster's client is still bounded; a given one wins.
func TestDefaultRequestTimeout(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
	cfg.Contexts["ctx"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	if err := clientcmd.WriteToFile(*cfg, kc); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", kc)
	t.Setenv("HOME", t.TempDir()) // the discovery cache
	for _, tt := range []struct {
		flag string // "-": not given
		want string
	}{
		{"-", "1m0s"},
		{"0", "1m0s"},
		{"5s", "5s"},
	} {
		flags := NewConfigFlags()
		ctx := "ctx"
		flags.Context = &ctx
		if tt.flag != "-" {
			v := tt.flag
			flags.Timeout = &v
		} else {
			flags.Timeout = nil
		}
		c, err := NewClient(flags)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Config.Timeout.String(); got != tt.want {
			t.Errorf("--request-timeout %s: the REST config's timeout is %s, want %s", tt.flag, got, tt.want)
		}
		// Discovery and identity probes build their config from the flags.
		rc, err := c.Flags.ToRESTConfig()
		if err != nil {
			t.Fatal(err)
		}
		if got := rc.Timeout.String(); got != tt.want {
			t.Errorf("--request-timeout %s: the flags give %s, want %s", tt.flag, got, tt.want)
		}
	}
}
