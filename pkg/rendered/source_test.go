package rendered

import "testing"

func TestAppName(t *testing.T) {
	for _, tt := range []struct {
		src  Source
		want string
	}{
		{Source{Kustomize: "apps/web"}, "web"},
		{Source{Kustomize: "apps/web/"}, "web"},
		{Source{Jsonnet: "dash/main.jsonnet"}, "main"},
		{Source{Jsonnet: "Web_App.v2.jsonnet"}, "web-app-v2"},
		{Source{Manifests: "deploy.yaml"}, "deploy"},
		{Source{Manifests: "-"}, "stdin"},
		{Source{Manifests: "x.yaml", Name: "named"}, "named"},
	} {
		if got := tt.src.appName(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.src, got, tt.want)
		}
	}
}
