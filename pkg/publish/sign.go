package publish

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/nacl/secretbox"
	"golang.org/x/crypto/scrypt"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/sopsfile"
)

// An artifact is signed the way `cosign sign --key` signs an image
// (cosign's "simple signing" format, which Flux's OCIRepository verify
// with provider cosign and a public key checks offline): a manifest
// tagged sha256-<hex>.sig in the artifact's repository, whose one layer
// is the payload naming the artifact's digest, its signature in the
// layer's annotation. Written with the standard library: the sigstore
// libraries would add tens of MB for one ECDSA signature.
const (
	SignatureMediaType  types.MediaType = "application/vnd.dev.cosign.simplesigning.v1+json"
	SignatureAnnotation                 = "dev.cosignproject.cosign/signature"
)

// Signer signs artifacts with an ECDSA P-256 key, cosign's.
type Signer struct {
	key *ecdsa.PrivateKey
}

// LoadSigner reads a private key: one `cosign generate-key-pair` wrote
// (encrypted; password gives its password, as COSIGN_PASSWORD does for
// cosign), or a PKCS#8 or SEC 1 PEM key. The key is never printed, in an
// error either.
func LoadSigner(data []byte, password func() ([]byte, error)) (*Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM key in it")
	}
	der := block.Bytes
	switch block.Type {
	case "ENCRYPTED SIGSTORE PRIVATE KEY", "ENCRYPTED COSIGN PRIVATE KEY":
		pw, err := password()
		if err != nil {
			return nil, err
		}
		if der, err = decryptCosignKey(block.Bytes, pw); err != nil {
			return nil, err
		}
	case "PRIVATE KEY", "EC PRIVATE KEY":
	default:
		return nil, fmt.Errorf("a PEM block of type %q, not a private key", block.Type)
	}
	var key any
	var err error
	if block.Type == "EC PRIVATE KEY" {
		key, err = x509.ParseECPrivateKey(der)
	} else {
		key, err = x509.ParsePKCS8PrivateKey(der)
	}
	if err != nil {
		return nil, errors.New("the key cannot be parsed")
	}
	ec, ok := key.(*ecdsa.PrivateKey)
	if !ok || ec.Curve != elliptic.P256() {
		return nil, errors.New("not an ECDSA P-256 key, as cosign generate-key-pair makes")
	}
	return &Signer{key: ec}, nil
}

// cosignKey is the JSON of an encrypted cosign key (go-securesystemslib's
// encrypted format): scrypt derives the key of a NaCl secretbox.
type cosignKey struct {
	KDF struct {
		Name   string `json:"name"`
		Params struct {
			N, R, P int
		} `json:"params"`
		Salt []byte `json:"salt"`
	} `json:"kdf"`
	Cipher struct {
		Name  string `json:"name"`
		Nonce []byte `json:"nonce"`
	} `json:"cipher"`
	Ciphertext []byte `json:"ciphertext"`
}

func decryptCosignKey(data, password []byte) ([]byte, error) {
	var k cosignKey
	if err := json.Unmarshal(data, &k); err != nil {
		return nil, errors.New("an encrypted cosign key that cannot be read")
	}
	p := k.KDF.Params
	if k.KDF.Name != "scrypt" || k.Cipher.Name != "nacl/secretbox" || len(k.Cipher.Nonce) != 24 || p.N <= 1 || p.N > 1<<20 || p.R <= 0 || p.R > 32 || p.P <= 0 || p.P > 16 {
		return nil, fmt.Errorf("an encrypted key of kdf %q and cipher %q with parameters cosign does not write", k.KDF.Name, k.Cipher.Name)
	}
	secret, err := scrypt.Key(password, k.KDF.Salt, p.N, p.R, p.P, 32)
	if err != nil {
		return nil, err
	}
	var key [32]byte
	var nonce [24]byte
	copy(key[:], secret)
	copy(nonce[:], k.Cipher.Nonce)
	plain, ok := secretbox.Open(nil, k.Ciphertext, &nonce, &key)
	if !ok {
		return nil, errors.New("the password does not decrypt the key (COSIGN_PASSWORD)")
	}
	return plain, nil
}

// PublicKey is the signer's public key, PEM: the cosign.pub that Flux's
// verify reads from its Secret.
func (s *Signer) PublicKey() ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(&s.key.PublicKey)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// Payload is what cosign signs of an image: its repository and digest.
type Payload struct {
	Critical struct {
		Identity struct {
			DockerReference string `json:"docker-reference"`
		} `json:"identity"`
		Image struct {
			DockerManifestDigest string `json:"docker-manifest-digest"`
		} `json:"image"`
		Type string `json:"type"`
	} `json:"critical"`
	Optional map[string]any `json:"optional"`
}

// SignatureTag is the tag of artifact d's signature.
func SignatureTag(d v1.Hash) string { return d.Algorithm + "-" + d.Hex + ".sig" }

// payloadOf is the payload cosign signs of artifact d in repo.
func payloadOf(repo name.Repository, d v1.Hash) Payload {
	var p Payload
	p.Critical.Identity.DockerReference = repo.Name()
	p.Critical.Image.DockerManifestDigest = d.String()
	p.Critical.Type = "cosign container image signature"
	return p
}

// sign signs p: its JSON, and the signature as cosign writes it.
func (s *Signer) sign(p Payload) (payload []byte, sig string, err error) {
	if payload, err = json.Marshal(p); err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(payload)
	raw, err := ecdsa.SignASN1(rand.Reader, s.key, sum[:])
	if err != nil {
		return nil, "", err
	}
	return payload, encodeSig(raw), nil
}

// staticLayer is a layer of data, uncompressed.
func staticLayer(data []byte, mt types.MediaType) v1.Layer { return static.NewLayer(data, mt) }

// Verify checks sig (base64) over payload with the public key pub
// (PEM) and that payload names d: what a verifier does.
func Verify(pub []byte, payload []byte, sig string, d v1.Hash) error {
	_, err := verifyPayload(pub, payload, sig, d)
	return err
}

// verifyPayload is Verify, which returns the payload read.
func verifyPayload(pub []byte, payload []byte, sig string, d v1.Hash) (Payload, error) {
	var p Payload
	block, _ := pem.Decode(pub)
	if block == nil {
		return p, errors.New("no PEM public key")
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return p, err
	}
	ec, ok := k.(*ecdsa.PublicKey)
	if !ok {
		return p, errors.New("not an ECDSA key")
	}
	raw, err := base64.StdEncoding.DecodeString(sig)
	if err != nil {
		return p, err
	}
	sum := sha256.Sum256(payload)
	if !ecdsa.VerifyASN1(ec, sum[:], raw) {
		return p, errors.New("the signature does not verify")
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		return p, err
	}
	if p.Critical.Image.DockerManifestDigest != d.String() || !strings.HasPrefix(p.Critical.Type, "cosign") {
		return p, fmt.Errorf("the payload names %s, not %s", p.Critical.Image.DockerManifestDigest, d)
	}
	return p, nil
}

// PasswordEnv holds the password of an encrypted cosign key, as for
// cosign itself.
const PasswordEnv = "COSIGN_PASSWORD"

// LoadSigning reads the key a delivery's signing names: a file (SOPS
// decrypts it when it is encrypted) or an environment variable; an
// encrypted cosign key's password comes from COSIGN_PASSWORD.
func LoadSigning(f *fleet.Fleet, s *fleet.Signing) (*Signer, error) {
	var (
		data  []byte
		where string
	)
	switch {
	case s.KeyEnv != "":
		where = "$" + s.KeyEnv
		v, ok := os.LookupEnv(s.KeyEnv)
		if !ok || v == "" {
			return nil, fmt.Errorf("the signing key %s is not set", where)
		}
		data = []byte(v)
	default:
		path := f.ResolvePath(s.Key)
		where = s.Key
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("the signing key: %w", err)
		}
		if data, err = (&sopsfile.Decrypter{}).Read(path, raw); err != nil {
			return nil, fmt.Errorf("the signing key: %w", err)
		}
	}
	signer, err := LoadSigner(data, func() ([]byte, error) {
		pw, ok := os.LookupEnv(PasswordEnv)
		if !ok {
			return nil, fmt.Errorf("%s is not set, and the key is encrypted", PasswordEnv)
		}
		return []byte(pw), nil
	})
	if err != nil {
		return nil, fmt.Errorf("the signing key %s: %w", where, err)
	}
	return signer, nil
}
