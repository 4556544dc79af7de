package render

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/internal/sopstest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/sopsfile"
)

const secretValue = "s3cr3t-from-sops"

// writeEncrypted writes plain, encrypted for k, to dir/name.
func writeEncrypted(t *testing.T, k sopstest.Key, dir, name, plain, regex string) {
	t.Helper()
	write(t, dir, name, string(k.Encrypt(t, name, plain, regex)))
}

func write(t *testing.T, dir, name, text string) {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// sopsSources are one source of each type reading encrypted files: a
// Secret manifest (Flux's encrypted_regex), a secretGenerator env file
// and a binary file, a Helm values file, and a jsonnet import and
// importstr.
func sopsSources(t *testing.T, k sopstest.Key) map[string]Source {
	dir := t.TempDir()
	secret := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: " + secretValue + "\n"
	writeEncrypted(t, k, dir, "kustomize/secret.yaml", secret, "^(data|stringData)$")
	writeEncrypted(t, k, dir, "kustomize/api.env", "TOKEN="+secretValue+"\n", "")
	writeEncrypted(t, k, dir, "kustomize/tls.key", "KEY "+secretValue+"\n", "")
	write(t, dir, "kustomize/kustomization.yaml", `resources: [secret.yaml]
namespace: shop
secretGenerator:
- name: api
  envs: [api.env]
- name: tls
  files: [tls.key]
`)
	writeEncrypted(t, k, dir, "manifests/secret.yaml", secret, "^(data|stringData)$")
	writeEncrypted(t, k, dir, "values.yaml", "image: nginx:"+secretValue+"\n", "")
	writeEncrypted(t, k, dir, "jsonnet/db.json", `{"password": "`+secretValue+`"}`, "")
	writeEncrypted(t, k, dir, "jsonnet/raw.yaml", "token: "+secretValue+"\n", "")
	write(t, dir, "jsonnet/main.jsonnet", `{
  apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db' },
  stringData: { password: (import 'db.json').password, raw: std.parseYaml(importstr 'raw.yaml').token },
}`)
	h := &Helm{Chart: abs("testdata/charts/web"), Values: []string{filepath.Join(dir, "values.yaml")}}
	return map[string]Source{
		"kustomize": {Type: Kustomize, Path: filepath.Join(dir, "kustomize")},
		"manifests": {Type: Manifests, Path: filepath.Join(dir, "manifests")},
		"jsonnet":   {Type: Jsonnet, Path: filepath.Join(dir, "jsonnet/main.jsonnet")},
		"helm":      {Type: HelmChart, Path: h.Chart, Namespace: "shop", Helm: h},
	}
}

// holds reports whether obj holds the secret value, as it is or in
// base64 (a Secret's data).
func holds(obj *unstructured.Unstructured) bool {
	text, _ := obj.MarshalJSON()
	for _, v := range []string{secretValue, base64.StdEncoding.EncodeToString([]byte(secretValue)), base64.StdEncoding.EncodeToString([]byte("KEY " + secretValue + "\n"))} {
		if bytes.Contains(text, []byte(v)) {
			return true
		}
	}
	return false
}

// findPrefix finds an object by kind and name or generated name
// ("api-7f9c…").
func findPrefix(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && (o.GetName() == name || strings.HasPrefix(o.GetName(), name+"-")) {
			return o
		}
	}
	return nil
}

// Every source type reads its encrypted files decrypted, each decrypted
// once however many clusters render it.
func TestRenderDecrypts(t *testing.T) {
	sopstest.Isolate(t)
	k := sopstest.NewKey(t)
	t.Setenv("SOPS_AGE_KEY", k.Identity)
	want := map[string][]string{
		"kustomize": {"Secret/db", "Secret/api", "Secret/tls"},
		"manifests": {"Secret/db"},
		"jsonnet":   {"Secret/db"},
		"helm":      {"Deployment/helm"},
	}
	keys := sopstest.NewCounting()
	e := &Engine{Secrets: &sopsfile.Decrypter{Keys: keys.Keys()}}
	var targets []Target
	for name, src := range sopsSources(t, k) {
		for _, c := range []string{"c1", "c2", "c3"} {
			targets = append(targets, Target{Cluster: cluster(c, "staging", nil), App: name, Source: src})
		}
	}
	for _, r := range e.Render(context.Background(), targets) {
		if r.Err != nil {
			t.Fatalf("%s %s: %v", r.Cluster.Name, r.App, r.Err)
		}
		for _, ref := range want[r.App] {
			kind, name, _ := strings.Cut(ref, "/")
			if o := findPrefix(r.Objects, kind, name); o == nil || !holds(o) {
				t.Errorf("%s %s: %s is not decrypted: %v", r.Cluster.Name, r.App, ref, o)
			}
		}
		for _, o := range r.Objects {
			if _, ok := o.Object["sops"]; ok {
				t.Errorf("%s %s: %s still carries SOPS metadata", r.Cluster.Name, r.App, ObjectRef(o))
			}
		}
	}
	// 8 files: secret.yaml twice (the same content at two paths is one
	// decryption), api.env, tls.key, values.yaml, db.json, raw.yaml.
	if n := keys.N.Load(); n != 7 {
		t.Errorf("%d decryptions for 8 files rendered for 3 clusters each, want 7 (once per content)", n)
	}
}

// Without the keys, a render for vet or render reads the files as they
// are, the values encrypted, and says which; a render that must decrypt
// names the file and its recipients, and stops.
func TestRenderWithoutKeys(t *testing.T) {
	sopstest.Isolate(t)
	k := sopstest.NewKey(t)
	srcs := sopsSources(t, k)
	for name, src := range srcs {
		t.Run(name, func(t *testing.T) {
			tgt := []Target{{Cluster: cluster("c1", "staging", nil), App: name, Source: src}}
			r := (&Engine{Secrets: &sopsfile.Decrypter{}}).Render(context.Background(), tgt)[0]
			if r.Err == nil || !strings.Contains(r.Err.Error(), "is encrypted with SOPS and no key here decrypts it") || !strings.Contains(r.Err.Error(), k.Recipient) {
				t.Errorf("keys required: err = %v", r.Err)
			}
			opt := &sopsfile.Decrypter{KeysOptional: true}
			r = (&Engine{Secrets: opt}).Render(context.Background(), tgt)[0]
			if r.Err != nil {
				t.Fatalf("keys optional: %v", r.Err)
			}
			for _, o := range r.Objects {
				if holds(o) {
					t.Errorf("%s holds the value without the key", ObjectRef(o))
				}
			}
			if u := opt.Undecrypted(); len(u) == 0 || !strings.Contains(u[0].Reason, "age: no age key here (looked in $SOPS_AGE_KEY") {
				t.Errorf("Undecrypted = %+v", u)
			}
		})
	}
}

// A Secret that comes out of a kustomize build still encrypted (its file's
// name does not say YAML) is decrypted as it was built, if no transformer
// changed it; if one did, its MAC says so and the error says what to do.
func TestRenderDecryptsBuiltSecret(t *testing.T) {
	sopstest.Isolate(t)
	k := sopstest.NewKey(t)
	t.Setenv("SOPS_AGE_KEY", k.Identity)
	dir := t.TempDir()
	writeEncrypted(t, k, dir, "secret.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: "+secretValue+"\n", "^(data|stringData)$")
	if err := os.Rename(filepath.Join(dir, "secret.yaml"), filepath.Join(dir, "secret.sops")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ kustomization, err string }{
		{"resources: [secret.sops]\n", ""},
		{"resources: [secret.sops]\nnamespace: shop\n", "give its file a .yaml name"},
	} {
		write(t, dir, "kustomization.yaml", tc.kustomization)
		e := &Engine{Secrets: &sopsfile.Decrypter{}}
		r := e.Render(context.Background(), []Target{{Cluster: cluster("c1", "staging", nil), App: "db", Source: Source{Type: Kustomize, Path: dir}}})[0]
		switch {
		case tc.err == "" && r.Err != nil:
			t.Errorf("%q: %v", tc.kustomization, r.Err)
		case tc.err == "" && (len(r.Objects) != 1 || !holds(r.Objects[0]) || r.Objects[0].Object["sops"] != nil):
			t.Errorf("%q: not decrypted: %v", tc.kustomization, r.Objects)
		case tc.err != "" && (r.Err == nil || !strings.Contains(r.Err.Error(), tc.err)):
			t.Errorf("%q: err = %v, want %q", tc.kustomization, r.Err, tc.err)
		}
	}
}

// A render that read a decrypted value says so whatever form the value
// took in it (base64 of "user:" and it, percent-encoded in a DSN,
// a PEM put on one line, Helm's float form of a large number), so that no
// pattern is needed to refuse publishing it; the same sources with
// their files in the clear, or a Secret left encrypted for Flux, do
// not say so.
func TestRenderDecryptedProvenance(t *testing.T) {
	sopstest.Isolate(t)
	k := sopstest.NewKey(t)
	t.Setenv("SOPS_AGE_KEY", k.Identity)
	const pw = "pa$$ w0rd/with+signs"
	values := "count: 1234567890123456789\npem: |\n  -----BEGIN KEY-----\n  MIIBkTCB+wIJALk3cT9pZ2nWMA0G\n  -----END KEY-----\n"
	jsonnetMain := `local db = import 'db.json';
{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'dsn' }, data: {
  basic: std.base64('user:' + db.password),
  dsn: 'postgres://app:' + std.join('%20', std.split(db.password, ' ')) + '@db/app',
} }`
	chart := map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: forms\nversion: 0.1.0\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: forms}\ndata:\n  count: {{ .Values.count | quote }}\n  pem: {{ .Values.pem | replace \"\\n\" \" \" | quote }}\n",
	}
	sources := func(t *testing.T, encrypt bool) map[string]Source {
		dir := t.TempDir()
		put := func(name, plain, regex string) {
			if encrypt {
				writeEncrypted(t, k, dir, name, plain, regex)
			} else {
				write(t, dir, name, plain)
			}
		}
		put("values.yaml", values, "")
		put("jsonnet/db.json", `{"password": "`+pw+`"}`, "")
		put("kustomize/app.env", "PASSWORD="+pw+"\n", "")
		put("manifests/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {password: \""+pw+"\"}\n", "^data$")
		write(t, dir, "jsonnet/main.jsonnet", jsonnetMain)
		write(t, dir, "kustomize/kustomization.yaml", "configMapGenerator:\n- {name: app, envs: [app.env]}\n")
		for name, text := range chart {
			write(t, dir, "chart/"+name, text)
		}
		h := &Helm{Chart: filepath.Join(dir, "chart"), Values: []string{filepath.Join(dir, "values.yaml")}}
		return map[string]Source{
			"kustomize": {Type: Kustomize, Path: filepath.Join(dir, "kustomize")},
			"manifests": {Type: Manifests, Path: filepath.Join(dir, "manifests")},
			"jsonnet":   {Type: Jsonnet, Path: filepath.Join(dir, "jsonnet/main.jsonnet")},
			"helm":      {Type: HelmChart, Path: h.Chart, Helm: h},
		}
	}
	for _, encrypt := range []bool{true, false} {
		e := &Engine{Secrets: &sopsfile.Decrypter{}}
		var targets []Target
		for name, src := range sources(t, encrypt) {
			for _, c := range []string{"c1", "c2"} { // the second from the memo
				targets = append(targets, Target{Cluster: cluster(c, "staging", nil), App: name, Source: src})
			}
		}
		for _, r := range e.Render(context.Background(), targets) {
			if r.Err != nil {
				t.Fatalf("%s %s: %v", r.Cluster.Name, r.App, r.Err)
			}
			if r.Decrypted != encrypt {
				t.Errorf("encrypted %v: %s %s: Decrypted = %v", encrypt, r.Cluster.Name, r.App, r.Decrypted)
			}
			if r.App == "jsonnet" || r.App == "helm" {
				for _, o := range r.Objects {
					if found := e.Secrets.Sensitive().In(o.Object); len(found) > 0 {
						t.Errorf("%s: a decrypted value is there as it was, which a pattern finds: %q", r.App, found)
					}
				}
			}
		}
	}

	// A Secret left encrypted for a decryptor in the cluster holds no
	// decrypted value.
	dir := t.TempDir()
	writeEncrypted(t, k, dir, "secret.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: db}\nstringData: {password: x}\n", "^(data|stringData)$")
	e := &Engine{Secrets: &sopsfile.Decrypter{Off: true}}
	r := e.Render(context.Background(), []Target{{Cluster: cluster("c1", "staging", nil), App: "db", Source: Source{Type: Manifests, Path: dir}}})[0]
	if r.Err != nil || r.Decrypted {
		t.Errorf("left encrypted: Decrypted = %v, err = %v", r.Decrypted, r.Err)
	}
}
