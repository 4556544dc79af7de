package publish

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/memo"
)

// What a registry keeps of a delivered cluster (its history, with each
// revision's verification and the current revision; its pauses) decides
// what is promoted, held and rolled back: someone with push rights alone
// must not be able to write it. So when a delivery signs, every record is
// signed with its key as it is written, bound to its repository and tag
// (a record copied to another tag does not verify there), and verified
// as it is read: a record without a signature of the key, or whose
// signature does not verify, is an UnsignedRecordError, and the reader
// fails closed (a history holds the rollout; a pause record holds every
// app). Approvals are signed by their approvers instead (approval).

// RecordSignatureAnnotation holds a record's signature (base64 ASN.1
// ECDSA over the SHA-256 of recordMessage), on its manifest.
const RecordSignatureAnnotation = "dev.kubectl-fleet/record-signature"

// RecordKeys sign and verify a delivery's records: Signer for writing,
// Public (PEM) for reading, each loaded once, when first needed.
type RecordKeys struct {
	Signer func() (*Signer, error)
	Public func() ([]byte, error)
}

// signers and publicKeys are the keys a process read, by where they come
// from (keyOf): once each, however often the fleet file is loaded again
// (reconcile loads it every pass), and again once a key file changes.
var (
	signers    memo.Memo[string, *Signer]
	publicKeys memo.Memo[string, []byte]
)

// keyOf names where s, a signing of f, takes its keys from: the files
// (with their size and time: a key rotated is read again) and the
// variable.
func keyOf(f *fleet.Fleet, s *fleet.Signing) string {
	file := func(p string) string {
		if p == "" {
			return ""
		}
		p = f.ResolvePath(p)
		if fi, err := os.Stat(p); err == nil {
			return fmt.Sprintf("%s@%d@%d", p, fi.Size(), fi.ModTime().UnixNano())
		}
		return p
	}
	return file(s.Key) + "\x00" + s.KeyEnv + "\x00" + file(s.PublicKey)
}

// SignerOf is the signer of s, a signing of f, read once (LoadSigning).
func SignerOf(f *fleet.Fleet, s *fleet.Signing) (*Signer, error) {
	return signers.Do(keyOf(f, s), func() (*Signer, error) { return LoadSigning(f, s) })
}

// KeysOf are the record keys of signing s of fleet f: nil for none. The
// public key is s.PublicKey's file when it names one, else the private
// key's.
func KeysOf(f *fleet.Fleet, s *fleet.Signing) *RecordKeys {
	if s == nil {
		return nil
	}
	return &RecordKeys{
		Signer: func() (*Signer, error) { return SignerOf(f, s) },
		Public: func() ([]byte, error) {
			return publicKeys.Do(keyOf(f, s), func() ([]byte, error) {
				if s.PublicKey == "" {
					signer, err := SignerOf(f, s)
					if err != nil {
						return nil, fmt.Errorf("%w (give signing.publicKey, the key's cosign.pub, to verify the registry's records without it)", err)
					}
					return signer.PublicKey()
				}
				pub, err := ReadPublicKey(f.ResolvePath(s.PublicKey))
				if err != nil {
					return nil, fmt.Errorf("signing.publicKey: %w", err)
				}
				return pub, nil
			})
		},
	}
}

// ReadPublicKey reads a signing key's public half: cosign.pub, a PEM
// ECDSA P-256 public key.
func ReadPublicKey(path string) ([]byte, error) {
	pub, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if err := checkPublicKey(pub); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return pub, nil
}

// checkPublicKey checks that pub is a PEM ECDSA P-256 public key.
func checkPublicKey(pub []byte) error {
	block, _ := pem.Decode(pub)
	if block == nil {
		return errors.New("no PEM public key in it")
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return errors.New("the public key cannot be parsed")
	}
	if ec, ok := k.(*ecdsa.PublicKey); !ok || ec.Curve != elliptic.P256() {
		return errors.New("not an ECDSA P-256 public key, as cosign generate-key-pair makes")
	}
	return nil
}

// UnsignedRecordError is a record read back without a valid signature of
// the delivery's key: someone without the key wrote it (by hand, or an
// earlier version of kubectl fleet), or forged it.
type UnsignedRecordError struct {
	Ref string // repository:tag
	Why string
}

func (e *UnsignedRecordError) Error() string {
	return fmt.Sprintf("the record %s is not signed by the delivery's key (%s): someone with push rights but not the key wrote it, or an earlier version did; once you know who, delete that tag, or write it again with the key", e.Ref, e.Why)
}

// ErrNoRecordKey is a record that cannot be written signed: the
// delivery's key cannot be read.
var ErrNoRecordKey = errors.New("the delivery's signing key, which signs its records, cannot be read")

// recordMessage is what a record's signature signs: its place and its
// bytes.
func recordMessage(ref name.Reference, data []byte) []byte {
	return append([]byte("kubectl-fleet record v1\n"+ref.Context().Name()+":"+ref.Identifier()+"\n"), data...)
}

// signRecord signs data, the record at ref.
func (k *RecordKeys) signRecord(ref name.Reference, data []byte) (string, error) {
	s, err := k.Signer()
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNoRecordKey, err)
	}
	sum := sha256.Sum256(recordMessage(ref, data))
	sig, err := ecdsa.SignASN1(rand.Reader, s.key, sum[:])
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(sig), nil
}

// verifyRecord checks sig, the signature on the record data at ref.
func (k *RecordKeys) verifyRecord(ref name.Reference, data []byte, sig string) error {
	pub, err := k.Public()
	if err != nil {
		return fmt.Errorf("cannot verify the record %s: %w", ref, err)
	}
	unsigned := func(why string) error { return &UnsignedRecordError{Ref: ref.String(), Why: why} }
	if sig == "" {
		return unsigned("it has no signature")
	}
	if err := checkPublicKey(pub); err != nil {
		return fmt.Errorf("cannot verify the record %s: %w", ref, err)
	}
	block, _ := pem.Decode(pub)
	key, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return err
	}
	ec, ok := key.(*ecdsa.PublicKey)
	raw, derr := base64.StdEncoding.DecodeString(sig)
	sum := sha256.Sum256(recordMessage(ref, data))
	if !ok || derr != nil || !ecdsa.VerifyASN1(ec, sum[:], raw) {
		return unsigned("its signature does not verify")
	}
	return nil
}
