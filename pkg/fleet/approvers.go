package fleet

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"strings"
)

// Approver is someone whose approval lets a release into a group marked
// approval: required: a name and the public half of the Ed25519 key
// their approvals are signed with (kubectl fleet approve --key). The
// deploy job holds no approver's private key, so it cannot approve its
// own release, whatever it may write in the clusters.
type Approver struct {
	// Name names the approver in output ("approved by alice").
	Name string `yaml:"name" jsonschema:"required"`
	// PublicKey is the approver's Ed25519 public key: PEM ("-----BEGIN
	// PUBLIC KEY-----", as openssl pkey -pubout prints it) or the base64
	// of the same DER on one line.
	PublicKey string `yaml:"publicKey" jsonschema:"required"`
}

// Key is the approver's public key.
func (a Approver) Key() (ed25519.PublicKey, error) { return ParsePublicKey(a.PublicKey) }

// ParsePublicKey reads an Ed25519 public key: PEM, or the base64 of its
// DER (SubjectPublicKeyInfo).
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	s = strings.TrimSpace(s)
	var der []byte
	if b, _ := pem.Decode([]byte(s)); b != nil {
		der = b.Bytes
	} else {
		var err error
		if der, err = base64.StdEncoding.DecodeString(s); err != nil {
			return nil, fmt.Errorf("want an Ed25519 public key, PEM or base64 (openssl pkey -in KEY -pubout): %v", err)
		}
	}
	k, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil, fmt.Errorf("want an Ed25519 public key (openssl pkey -in KEY -pubout): %v", err)
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("want an Ed25519 public key, got a %T (openssl genpkey -algorithm ed25519 makes one)", k)
	}
	return pub, nil
}

// validateApprovers checks the approvers, and that a fleet with a group
// marked approval: required has some: an approval anyone who may apply
// could write would be no gate.
func (f *Fleet) validateApprovers(e *errs) {
	names, keys := map[string]bool{}, map[string]string{}
	for i, a := range f.Approvers {
		p := fmt.Sprintf("approvers[%d]", i)
		validateName(e, p+".name", a.Name)
		if names[a.Name] && a.Name != "" {
			e.add(p+".name", "duplicate approver %q", a.Name)
		}
		names[a.Name] = true
		k, err := a.Key()
		if err != nil {
			e.add(p+".publicKey", "%v", err)
			continue
		}
		if other, ok := keys[string(k)]; ok {
			e.add(p+".publicKey", "the same key as approver %s's: one key, one approver", other)
		}
		keys[string(k)] = a.Name
	}
	if len(f.Approvers) > 0 {
		return
	}
	for i, g := range f.Groups {
		if g.Approval.Required {
			e.add(fmt.Sprintf("groups[%d].approval", i), "required, but the fleet has no approvers: list whose signed approvals count (approvers: [{name, publicKey}]), so that the job that applies cannot approve its own release")
		}
	}
}
