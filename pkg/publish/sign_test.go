package publish_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"golang.org/x/crypto/nacl/secretbox"
	"golang.org/x/crypto/scrypt"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
)

// cosignKey writes key as `cosign generate-key-pair` does: PKCS#8,
// sealed in a NaCl secretbox under an scrypt key of password.
func cosignKey(t *testing.T, key *ecdsa.PrivateKey, password string) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	salt, nonce := make([]byte, 32), [24]byte{}
	rand.Read(salt)
	rand.Read(nonce[:])
	secret, err := scrypt.Key([]byte(password), salt, 32768, 8, 1, 32)
	if err != nil {
		t.Fatal(err)
	}
	var k [32]byte
	copy(k[:], secret)
	body, _ := json.Marshal(map[string]any{
		"kdf":        map[string]any{"name": "scrypt", "params": map[string]any{"N": 32768, "r": 8, "p": 1}, "salt": salt},
		"cipher":     map[string]any{"name": "nacl/secretbox", "nonce": nonce[:]},
		"ciphertext": secretbox.Seal(nil, der, &nonce, &k),
	})
	return pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED SIGSTORE PRIVATE KEY", Bytes: body})
}

func TestLoadSigner(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(ec)
	sec1, _ := x509.MarshalECPrivateKey(ec)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	rsa8, _ := x509.MarshalPKCS8PrivateKey(rsaKey)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	p384der, _ := x509.MarshalPKCS8PrivateKey(p384)
	pw := func(s string) func() ([]byte, error) { return func() ([]byte, error) { return []byte(s), nil } }
	for _, tt := range []struct {
		name     string
		data     []byte
		password func() ([]byte, error)
		want     string // error substring; "" for none
	}{
		{"pkcs8", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}), nil, ""},
		{"sec1", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1}), nil, ""},
		{"cosign's", cosignKey(t, ec, "s3cret"), pw("s3cret"), ""},
		{"cosign's, wrong password", cosignKey(t, ec, "s3cret"), pw("guess"), "the password does not decrypt the key"},
		{"cosign's, no password", cosignKey(t, ec, "s3cret"), func() ([]byte, error) { return nil, errors.New("COSIGN_PASSWORD is not set") }, "COSIGN_PASSWORD is not set"},
		{"rsa", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: rsa8}), nil, "not an ECDSA P-256 key"},
		{"p384", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p384der}), nil, "not an ECDSA P-256 key"},
		{"a public key", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte("x")}), nil, `type "PUBLIC KEY", not a private key`},
		{"garbage", []byte("key"), nil, "no PEM key"},
		{"broken", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("secret-bytes")}), nil, "the key cannot be parsed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := publish.LoadSigner(tt.data, tt.password)
			switch {
			case tt.want == "" && err != nil:
				t.Fatal(err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("got %v, want %q", err, tt.want)
			case err != nil && strings.Contains(err.Error(), "secret-bytes"):
				t.Fatalf("the error prints the key: %v", err)
			}
		})
	}
}

// TestSign signs a pushed artifact and reads the signature back as a
// verifier does: by the tag cosign names, checked with the public key.
func TestSign(t *testing.T) {
	var c counting
	r := c.registryOf(t)
	ctx := context.Background()
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	s, err := publish.LoadSigner(cosignKey(t, ec, "pw"), func() ([]byte, error) { return []byte("pw"), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, _ := publish.Pack([]*unstructured.Unstructured{cm("a", "1")}, publish.Origin{})
	d, err := r.Push(ctx, "web", img)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Sign(ctx, "web", d, s, publish.Claim{}); err != nil {
		t.Fatal(err)
	}
	repo, _ := r.Repository("web")
	sig, err := remote.Image(repo.Tag(publish.SignatureTag(d)), remote.WithAuthFromKeychain(r.Keychain))
	if err != nil {
		t.Fatalf("no signature at %s: %v", publish.SignatureTag(d), err)
	}
	m, _ := sig.Manifest()
	layers, _ := sig.Layers()
	if len(layers) != 1 || m.Layers[0].MediaType != publish.SignatureMediaType {
		t.Fatalf("signature manifest: %+v", m)
	}
	rc, _ := layers[0].Uncompressed()
	payload, _ := io.ReadAll(rc)
	pub, err := s.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := publish.Verify(pub, payload, m.Layers[0].Annotations[publish.SignatureAnnotation], d); err != nil {
		t.Fatalf("the signature does not verify: %v\n%s", err, payload)
	}
	if !strings.Contains(string(payload), `"docker-reference":"`+repo.Name()+`"`) {
		t.Errorf("payload: %s", payload)
	}
	other, _ := publish.Pack([]*unstructured.Unstructured{cm("a", "2")}, publish.Origin{})
	od, _ := other.Digest()
	if err := publish.Verify(pub, payload, m.Layers[0].Annotations[publish.SignatureAnnotation], od); err == nil {
		t.Error("a signature of one artifact verified another")
	}
}

// A signature made at a cluster's wave names the cluster, app, fleet
// and release; a second cluster that gets the same artifact signs
// nothing more (one signature per key, whatever the fleet's size); and
// what reads them back wants a signature of this key, of this digest,
// naming the fleet and app: another fleet's or app's, another key's, or
// a signature copied from another artifact is refused.
func TestSignClaims(t *testing.T) {
	var c counting
	r := c.registryOf(t)
	ctx := context.Background()
	key := func() *publish.Signer {
		ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		der, _ := x509.MarshalPKCS8PrivateKey(ec)
		s, err := publish.LoadSigner(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s, other := key(), key()
	pub, _ := s.PublicKey()
	push := func(v string) v1.Hash {
		img, _ := publish.Pack([]*unstructured.Unstructured{cm("a", v)}, publish.Origin{})
		d, err := r.Push(ctx, "web", img)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	d, evil := push("1"), push("evil")
	stg := publish.Claim{Fleet: "shop", Cluster: "stg", App: "web", Revision: 3}
	prod := publish.Claim{Fleet: "shop", Cluster: "prod", App: "web", Revision: 7}
	for _, claim := range []publish.Claim{stg, prod, stg} { // signed once, for stg
		if err := r.Sign(ctx, "web", d, s, claim); err != nil {
			t.Fatal(err)
		}
	}
	sigs, err := r.Signatures(ctx, "web", d)
	if err != nil || len(sigs) != 1 {
		t.Fatalf("%d signatures, want stg's alone: %v", len(sigs), err)
	}
	for i, want := range []publish.Claim{stg} {
		var p publish.Payload
		if err := json.Unmarshal(sigs[i].Payload, &p); err != nil {
			t.Fatal(err)
		}
		if got, ok := publish.ClaimOf(p); !ok || got != want {
			t.Errorf("signature %d claims %+v, want %+v", i, got, want)
		}
	}
	for _, tc := range []struct {
		name  string
		d     v1.Hash
		claim publish.Claim
		want  string // "" passes
	}{
		{"its cluster", d, publish.Claim{Fleet: "shop", Cluster: "stg", App: "web"}, ""},
		{"another cluster that shares it", d, publish.Claim{Fleet: "shop", Cluster: "prod", App: "web"}, ""},
		{"another fleet", d, publish.Claim{Fleet: "other", Cluster: "stg", App: "web"}, "carries no signature of this delivery's key for fleet other, app web: its signature is for fleet shop, app web"},
		{"another app", d, publish.Claim{Fleet: "shop", Cluster: "stg", App: "api"}, "carries no signature of this delivery's key for fleet shop, app api"},
		{"never signed", evil, publish.Claim{Fleet: "shop", Cluster: "stg", App: "web"}, "carries no signature of this delivery's key for fleet shop, app web: not signed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := r.SignedFor(ctx, tc.d, pub, tc.claim)
			if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("SignedFor = %v, want %q", err, tc.want)
			}
		})
	}
	// Another key's signature of the right claim does not count.
	if err := r.Sign(ctx, "web", evil, other, stg); err != nil {
		t.Fatal(err)
	}
	if err := r.SignedFor(ctx, evil, pub, stg); err == nil || !strings.Contains(err.Error(), "does not verify") {
		t.Errorf("another key's signature: %v", err)
	}
	// A signature copied from d's manifest onto evil's tag: it names d.
	repo, _ := r.Repository("web")
	good, err := remote.Image(repo.Tag(publish.SignatureTag(d)), remote.WithAuthFromKeychain(r.Keychain))
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(repo.Tag(publish.SignatureTag(evil)), good, remote.WithAuthFromKeychain(r.Keychain)); err != nil {
		t.Fatal(err)
	}
	if err := r.SignedFor(ctx, evil, pub, stg); err == nil || !strings.Contains(err.Error(), "the payload names "+d.String()) {
		t.Errorf("a copied signature: %v", err)
	}
}

// A delete's artifact of nothing is its own for each claim and run: the
// one signed for one cluster, app or run is not another's.
func TestNothingIsUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range []publish.Claim{{Fleet: "f", Cluster: "a", App: "web"}, {Fleet: "f", Cluster: "b", App: "web"}, {Fleet: "f", Cluster: "a", App: "api"}, {Fleet: "f", Cluster: "a", App: "web"}} {
		img, err := publish.Nothing(c)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := img.Digest()
		if seen[d.String()] {
			t.Errorf("%+v: digest %s made before", c, d)
		}
		seen[d.String()] = true
		if objs, err := publish.Unpack(img); err != nil || len(objs) != 0 {
			t.Errorf("%+v: the artifact of nothing holds %d objects (%v)", c, len(objs), err)
		}
	}
}
