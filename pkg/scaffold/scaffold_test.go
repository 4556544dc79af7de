package scaffold

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
)

func TestPlace(t *testing.T) {
	tests := []struct {
		name     string
		contexts []string
		groups   []string
		want     []Cluster
		wantErr  string
	}{
		{"guessed from the names", []string{"prod-eu", "kind-dev", "arn:aws:eks:eu-west-1:1:cluster/prod", "minikube"}, nil, []Cluster{
			{Name: "kind-dev", Context: "kind-dev", Group: "staging", Guessed: true},
			{Name: "minikube", Context: "minikube", Group: "staging", Guessed: true},
			{Name: "prod-eu", Context: "prod-eu", Group: "production", Guessed: true},
			{Name: "prod", Context: "arn:aws:eks:eu-west-1:1:cluster/prod", Group: "production", Guessed: true},
		}, ""},
		{"a name is never taken twice", []string{"a/web", "b/web", "web"}, nil, []Cluster{
			{Name: "web", Context: "a/web", Group: "production", Guessed: true},
			{Name: "web-2", Context: "b/web", Group: "production", Guessed: true},
			{Name: "web-3", Context: "web", Group: "production", Guessed: true},
		}, ""},
		{"groups by glob, first match, * across / and :", []string{"gke_p_z_stg", "arn:aws:eks:x:1:cluster/prod"}, []string{"canary=*stg", "prod=arn:*"}, []Cluster{
			{Name: "gke-p-z-stg", Context: "gke_p_z_stg", Group: "canary"},
			{Name: "prod", Context: "arn:aws:eks:x:1:cluster/prod", Group: "prod"},
		}, ""},
		{"a context no group takes", []string{"a", "b"}, []string{"g=a"}, nil, "no --group takes the contexts b"},
		{"a group that is not a label", []string{"a"}, []string{"Prod=a"}, nil, `--group "Prod=a": want NAME=GLOB`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, got, err := Place(tt.contexts, tt.groups)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestYAMLString: what init writes reads back as the same string.
func TestYAMLString(t *testing.T) {
	for _, s := range []string{"prod-eu", "001", "1e3", "true", "yes", "null", "arn:aws:eks:x:1:cluster/p", "/home/me/.kube/config", "a b", "", "~", "0x1F", "-dash"} {
		var back string
		if err := yaml.Unmarshal([]byte("v: "+yamlString(s)), &struct {
			V *string `yaml:"v"`
		}{&back}); err != nil || back != s {
			t.Errorf("%q written as %s reads back as %q (%v)", s, yamlString(s), back, err)
		}
	}
	if yamlString("prod-eu") != "prod-eu" {
		t.Errorf("a plain name is quoted: %s", yamlString("prod-eu"))
	}
}
