// Package sopstest gives tests an age key of their own and a process
// environment in which the sops keysources find only what the test gives
// them.
package sopstest

import (
	"context"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"filippo.io/age"
	"github.com/getsops/sops/v3/keyservice"
	"google.golang.org/grpc"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/sopsfile"
)

// Key is an age identity made for one test.
type Key struct {
	// Identity is the secret key, "AGE-SECRET-KEY-1…".
	Identity string
	// Recipient is the public key, "age1…".
	Recipient string
}

// NewKey makes an age identity.
func NewKey(t testing.TB) Key {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return Key{Identity: id.String(), Recipient: id.Recipient().String()}
}

// Isolate empties every place the sops keysources look for keys, for the
// rest of the test: SOPS_* variables are unset, and HOME,
// XDG_CONFIG_HOME and GNUPGHOME are an empty folder. It returns that
// folder.
func Isolate(t testing.TB) string {
	t.Helper()
	home := t.TempDir()
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "SOPS_") || strings.HasPrefix(name, "AWS_") || strings.HasPrefix(name, "VAULT_") {
			t.Setenv(name, "")
			os.Unsetenv(name)
		}
	}
	for _, name := range []string{"HOME", "XDG_CONFIG_HOME", "GNUPGHOME", "USERPROFILE", "APPDATA"} {
		t.Setenv(name, home)
	}
	return home
}

// Counting is the local key service, counting the data keys it decrypts.
type Counting struct {
	keyservice.KeyServiceClient
	N atomic.Int32
}

// NewCounting is a Counting over the local key service.
func NewCounting() *Counting {
	return &Counting{KeyServiceClient: keyservice.NewLocalClient()}
}

// Decrypt implements keyservice.KeyServiceClient.
func (c *Counting) Decrypt(ctx context.Context, in *keyservice.DecryptRequest, opts ...grpc.CallOption) (*keyservice.DecryptResponse, error) {
	c.N.Add(1)
	return c.KeyServiceClient.Decrypt(ctx, in, opts...)
}

// Keys is c as a Decrypter's Keys.
func (c *Counting) Keys() []keyservice.KeyServiceClient {
	return []keyservice.KeyServiceClient{c}
}

// Encrypt encrypts plain for k, in the format the file name gives, as
// "sops -e --age k [--encrypted-regex regex]" does.
func (k Key) Encrypt(t testing.TB, name, plain, regex string) []byte {
	t.Helper()
	out, err := sopsfile.Encrypt(sopsfile.FormatOf(name), []byte(plain), []string{k.Recipient}, regex)
	if err != nil {
		t.Fatalf("encrypting %s: %v", name, err)
	}
	return out
}
