package kube

import (
	"strings"
	"testing"
)

func TestScrub(t *testing.T) {
	const jwt = "eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.eyJzdWIiOiJhZG1pbiJ9.c2lnbmF0dXJlMTIz"
	tests := []struct {
		in, want string
		secrets  []string // must not be in the output
	}{
		{"Error reading secret/prod-us: permission denied", "Error reading secret/prod-us: permission denied", nil},
		{"token: s3cr3t", "token: " + Redacted, []string{"s3cr3t"}},
		{`    "password": "hunter2",`, `    "password": ` + Redacted + `,`, []string{"hunter2"}},
		{"client-key-data: LS0tLS1CRUdJTg==\nclient-certificate-data: 'abc'", "client-key-data: " + Redacted + "\nclient-certificate-data: " + Redacted, []string{"LS0t", "abc"}},
		{"vault: --token=hvs.abc VAULT_TOKEN=x", "vault: --token=" + Redacted + " VAULT_TOKEN=" + Redacted, []string{"hvs.abc", "=x"}},
		{"Authorization: Bearer abc.def", "Authorization: Bearer " + Redacted, []string{"abc.def"}},
		{"auth: basic dXNlcjpwYXNz", "auth: basic " + Redacted, []string{"dXNlcjpwYXNz"}},
		{"got " + jwt + " back", "got " + Redacted + " back", []string{"eyJ", "c2ln"}},
		{"hex 0123456789abcdef0123456789abcdef", "hex " + Redacted, []string{"0123456789abcdef"}},
		{"api_key=AKIA1234", "api_key=" + Redacted, []string{"AKIA"}},
		{"kubeadm join 10.0.0.1:6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash sha256:x", "kubeadm join 10.0.0.1:6443 --token " + Redacted + " --discovery-token-ca-cert-hash sha256:x", []string{"abcdef.0123456789abcdef", "0123456789abcdef"}},
		{"bootstrap token 07401b.f395accd246ae52d expired", "bootstrap token " + Redacted + " expired", []string{"07401b", "f395accd"}},
		{"docker login -u ci -p hunter2 registry.example.com", "docker login -u ci -p " + Redacted + " registry.example.com", []string{"hunter2"}},
		{"vault login --password 's3cr3t pass' now", "vault login --password " + Redacted + " now", []string{"s3cr3t"}},
		{"mysql --passwd hunter2", "mysql --passwd " + Redacted, []string{"hunter2"}},
		{"fetching https://ci-bot:gh0st@git.example.com/repo.git failed", "fetching https://ci-bot:" + Redacted + "@git.example.com/repo.git failed", []string{"gh0st"}},
		{"proxy http://user:p%40ss@proxy:3128", "proxy http://user:" + Redacted + "@proxy:3128", []string{"p%40ss"}},
		// A URL without a password, and a port, stay.
		{"server https://10.0.0.1:6443 and https://admin@host/x", "server https://10.0.0.1:6443 and https://admin@host/x", nil},
		// Long names without digits and short mixed words stay.
		{"kubeconfig-from-command-not-found in v1.2", "kubeconfig-from-command-not-found in v1.2", nil},
		{"", "", nil},
	}
	for _, tt := range tests {
		got := Scrub(tt.in)
		if got != tt.want {
			t.Errorf("Scrub(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
		for _, s := range tt.secrets {
			if strings.Contains(got, s) {
				t.Errorf("Scrub(%q) = %q still holds %q", tt.in, got, s)
			}
		}
	}
}
