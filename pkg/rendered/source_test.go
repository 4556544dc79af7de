package rendered

import (
	"strings"
	"testing"
)

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
		{Source{Kustomize: "oci://ghcr.io/acme/bases/web:v1.2.0"}, "web"},
		{Source{Manifests: "oci://127.0.0.1:5000/crds@sha256:" + strings.Repeat("0", 64)}, "crds"},
	} {
		if got := tt.src.appName(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.src, got, tt.want)
		}
	}
}
