package sopsfile_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getsops/sops/v3/keyservice"
	"google.golang.org/grpc"

	"github.com/kubectl-fleet/kubectl-fleet/internal/sopstest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/sopsfile"
)

const password = "hunter2-correct-horse"

// plain is one file of each format, holding the password.
var plain = map[string]string{
	"secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: " + password + "\n",
	"values.json": `{"db": {"password": "` + password + `"}}`,
	"db.env":      "USER=app\nPASSWORD=" + password + "\n",
	"db.ini":      "[db]\npassword = " + password + "\n",
	"tls.key":     "-----BEGIN KEY-----\n" + password + "\n-----END KEY-----\n",
}

func encrypt(t *testing.T, k sopstest.Key, name, regex string) []byte {
	t.Helper()
	enc := k.Encrypt(t, name, plain[name], regex)
	if bytes.Contains(enc, []byte(password)) {
		t.Fatalf("%s: the encrypted file holds the password", name)
	}
	return enc
}

func TestReadEveryFormat(t *testing.T) {
	sopstest.Isolate(t)
	k := sopstest.NewKey(t)
	t.Setenv("SOPS_AGE_KEY", k.Identity)
	for name := range plain {
		t.Run(name, func(t *testing.T) {
			enc := encrypt(t, k, name, "")
			if !sopsfile.Encrypted(sopsfile.FormatOf(name), enc) {
				t.Fatalf("Encrypted = false for\n%s", enc)
			}
			var d sopsfile.Decrypter
			out, err := d.Read("repo/"+name, enc)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(out, []byte(password)) {
				t.Errorf("decrypted:\n%s", out)
			}
			if files := d.Files(); len(files) != 1 || !files[0].Decrypted || files[0].Path != "repo/"+name {
				t.Errorf("Files = %+v", files)
			}
		})
	}
}

// A file with no SOPS metadata is returned as it is, even when it speaks
// of sops: nothing is decrypted that is not encrypted.
func TestReadPlain(t *testing.T) {
	var d sopsfile.Decrypter
	for name, data := range map[string]string{
		"cm.yaml":  "kind: ConfigMap\ndata:\n  sops: |\n    sops:\n      mac: x\n",
		"doc.yaml": "# how to use sops:\nkind: ConfigMap\n",
		"a.json":   `{"tool": "sops"}`,
		"a.env":    "TOOL=sops\n",
		"plain":    plain["tls.key"],
	} {
		out, err := d.Read(name, []byte(data))
		if err != nil || string(out) != data {
			t.Errorf("%s: Read = %q, %v; want it as it is", name, out, err)
		}
	}
	if files := d.Files(); len(files) != 0 {
		t.Errorf("Files = %+v, want none", files)
	}
}

// 100 clusters reading one file, at once, decrypt it once.
func TestReadOncePerFile(t *testing.T) {
	sopstest.Isolate(t)
	k := sopstest.NewKey(t)
	t.Setenv("SOPS_AGE_KEY", k.Identity)
	enc := encrypt(t, k, "values.json", "")
	keys := sopstest.NewCounting()
	d := sopsfile.Decrypter{Keys: keys.Keys()}
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			if _, err := d.Read("values.json", bytes.Clone(enc)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := keys.N.Load(); n != 1 {
		t.Errorf("%d decryptions, want 1", n)
	}
}

// TestReadNamesTheKeyFile: a SOPS_AGE_KEY_FILE that holds another key (a
// demo's, left exported) is named, with the key it holds, so that the
// user sees why nothing decrypts; the identity itself is never printed.
func TestReadNamesTheKeyFile(t *testing.T) {
	sopstest.Isolate(t)
	k, demo := sopstest.NewKey(t), sopstest.NewKey(t)
	enc := encrypt(t, k, "secret.yaml", "^(data|stringData)$")
	file := filepath.Join(t.TempDir(), "demo-age-key.txt")
	if err := os.WriteFile(file, []byte(demo.Identity+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SOPS_AGE_KEY_FILE", file)
	var d sopsfile.Decrypter
	_, err := d.Read("secret.yaml", enc)
	want := "tried: age: the keys here are " + demo.Recipient + " (from $SOPS_AGE_KEY_FILE=" + file + "), and the file is not encrypted for any of them"
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), demo.Identity) {
		t.Errorf("error %v\nwant it to say %q", err, want)
	}
	// vet's and render's warning of a file they read as it is says it too.
	opt := sopsfile.Decrypter{KeysOptional: true}
	if _, err := opt.Read("secret.yaml", enc); err != nil {
		t.Fatal(err)
	}
	if u := opt.Undecrypted(); len(u) != 1 || !strings.Contains(u[0].NoKey(), "no key here decrypts it (age: the keys here are "+demo.Recipient+" (from $SOPS_AGE_KEY_FILE="+file+")") {
		t.Errorf("Undecrypted = %+v", u)
	}
}

func TestReadRefuses(t *testing.T) {
	sopstest.Isolate(t)
	k, other := sopstest.NewKey(t), sopstest.NewKey(t)
	enc := encrypt(t, k, "secret.yaml", "^(data|stringData)$")
	tampered := bytes.Replace(enc, []byte("name: db"), []byte("name: dc"), 1)
	for _, tc := range []struct {
		name, key string
		data      []byte
		want      []string
	}{
		{"missing key", "", enc, []string{"secret.yaml is encrypted with SOPS and no key here decrypts it", "age " + k.Recipient, "tried: age: no age key here (looked in $SOPS_AGE_KEY, "}},
		{"wrong key", other.Identity, enc, []string{"no key here decrypts it", "age " + k.Recipient, "tried: age: the keys here are " + other.Recipient + " (from $SOPS_AGE_KEY), and the file is not encrypted for any of them"}},
		{"tampered", k.Identity, tampered, []string{"secret.yaml: SOPS: the file is not what its MAC says"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("SOPS_AGE_KEY", tc.key)
			if tc.key == "" {
				os.Unsetenv("SOPS_AGE_KEY")
			}
			var d sopsfile.Decrypter
			out, err := d.Read("secret.yaml", tc.data)
			if err == nil {
				t.Fatalf("Read = %s, want an error", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), password) || strings.Contains(err.Error(), other.Identity) {
				t.Errorf("the error holds a secret: %v", err)
			}
			// Without keys, what cannot be decrypted is read as it is;
			// what is not what its MAC says is refused all the same.
			opt := sopsfile.Decrypter{KeysOptional: true}
			out, err = opt.Read("secret.yaml", tc.data)
			var nk *sopsfile.NoKeyError
			switch {
			case errors.As(err, &nk):
				t.Errorf("KeysOptional: %v", err)
			case tc.name == "tampered" && err == nil:
				t.Error("KeysOptional read a tampered file")
			case tc.name != "tampered" && (err != nil || !bytes.Equal(out, tc.data)):
				t.Errorf("KeysOptional: Read = %q, %v; want the file as it is", out, err)
			case tc.name != "tampered" && len(opt.Undecrypted()) != 1:
				t.Errorf("Undecrypted = %+v", opt.Undecrypted())
			}
		})
	}
}

// Off reads an encrypted Secret manifest as it is, and lists it; any
// other encrypted file is refused.
func TestReadOff(t *testing.T) {
	sopstest.Isolate(t)
	k := sopstest.NewKey(t)
	t.Setenv("SOPS_AGE_KEY", k.Identity)
	d := sopsfile.Decrypter{Off: true}
	enc := encrypt(t, k, "secret.yaml", "^(data|stringData)$")
	out, err := d.Read("secret.yaml", enc)
	if err != nil || !bytes.Equal(out, enc) {
		t.Fatalf("Read = %q, %v", out, err)
	}
	if u := d.Undecrypted(); len(u) != 1 || u[0].Path != "secret.yaml" {
		t.Errorf("Undecrypted = %+v", u)
	}
	for _, name := range []string{"db.env", "values.json"} {
		if _, err := d.Read(name, encrypt(t, k, name, "")); err == nil || !strings.Contains(err.Error(), "--decrypt writes its values decrypted") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

// The decrypted values are known, and redacted from any text, in their
// base64 form too.
func TestValuesRedact(t *testing.T) {
	sopstest.Isolate(t)
	k := sopstest.NewKey(t)
	t.Setenv("SOPS_AGE_KEY", k.Identity)
	var d sopsfile.Decrypter
	if _, err := d.Read("secret.yaml", encrypt(t, k, "secret.yaml", "^(data|stringData)$")); err != nil {
		t.Fatal(err)
	}
	if v := d.Values(); len(v) != 1 || v[0] != password {
		t.Errorf("Values = %q, want only the password (metadata was not encrypted)", v)
	}
	b64 := base64.StdEncoding.EncodeToString([]byte(password))
	msg := d.Redact("error: " + password + " and " + b64 + " in name: db")
	if want := "error: *** and *** in name: db"; msg != want {
		t.Errorf("Redact = %q, want %q", msg, want)
	}
}

// A file with SOPS metadata that does not load is an error naming it, not
// a plain file; so is one whose metadata names no key.
func TestReadBadMetadata(t *testing.T) {
	sopstest.Isolate(t)
	for name, data := range map[string]string{
		"junk.yaml":   "password: ENC[x]\nsops:\n  mac: 42\n  version: [1, 2]\n",
		"nokeys.yaml": "password: ENC[AES256_GCM,data:AA==,iv:AA==,tag:AA==,type:str]\nsops:\n  mac: x\n  lastmodified: \"2026-01-01T00:00:00Z\"\n  version: 3.13.3\n",
		"junk.json":   `{"a": 1, "sops": {"mac": []}}`,
	} {
		var d sopsfile.Decrypter
		out, err := d.Read(name, []byte(data))
		if err == nil {
			t.Errorf("%s: Read = %q, want an error", name, out)
			continue
		}
		if !strings.Contains(err.Error(), name) {
			t.Errorf("%s: the error does not name the file: %v", name, err)
		}
	}
}

// hanging is a key service that never answers: a KMS behind a network
// that drops packets.
type hanging struct{ keyservice.KeyServiceClient }

func (hanging) Decrypt(ctx context.Context, _ *keyservice.DecryptRequest, _ ...grpc.CallOption) (*keyservice.DecryptResponse, error) {
	select {} // ignores ctx, as a client without a deadline would
}

// A key service that does not answer fails the file within KeyTimeout,
// naming it, instead of hanging the run.
func TestReadKeyServiceHangs(t *testing.T) {
	sopstest.Isolate(t)
	k := sopstest.NewKey(t)
	enc := encrypt(t, k, "values.json", "")
	d := sopsfile.Decrypter{Keys: []keyservice.KeyServiceClient{hanging{}}, KeyTimeout: 100 * time.Millisecond}
	done := make(chan error, 1)
	go func() {
		_, err := d.Read("values.json", enc)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "values.json") || !strings.Contains(err.Error(), "did not answer in 100ms") {
			t.Errorf("err = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Read hangs with a key service that does not answer")
	}
}

// A file whose MAC was removed still carries SOPS metadata: it is
// encrypted, and refused, with a key or without one. Before, YAML and
// JSON without "mac" were read as plain, and their ciphertext would have
// been applied as the values.
func TestReadNoMAC(t *testing.T) {
	sopstest.Isolate(t)
	k := sopstest.NewKey(t)
	macLine := regexp.MustCompile(`(?m)^\s*"?(sops_)?mac"?\s*[:=].*\n`)
	for name := range plain {
		t.Run(name, func(t *testing.T) {
			enc := encrypt(t, k, name, "")
			stripped := macLine.ReplaceAll(enc, nil)
			if bytes.Equal(stripped, enc) {
				t.Fatalf("no mac line in\n%s", enc)
			}
			if strings.HasSuffix(name, ".json") || name == "tls.key" {
				// The line before ends with a comma JSON no longer wants.
				stripped = regexp.MustCompile(`,(\s*})`).ReplaceAll(stripped, []byte("$1"))
			}
			if !sopsfile.Encrypted(sopsfile.FormatOf(name), stripped) {
				t.Fatalf("Encrypted = false without the MAC:\n%s", stripped)
			}
			for _, key := range []string{k.Identity, ""} {
				t.Setenv("SOPS_AGE_KEY", key)
				d := sopsfile.Decrypter{KeysOptional: key == ""}
				out, err := d.Read(name, stripped)
				if err == nil || !strings.Contains(err.Error(), "no MAC") {
					t.Errorf("key %v: Read = %.60q, %v; want a refusal for the missing MAC", key != "", out, err)
				}
			}
		})
	}
}
