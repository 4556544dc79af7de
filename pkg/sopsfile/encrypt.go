package sopsfile

import (
	"fmt"
	"strings"
	"time"

	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	"github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/keys"
)

// Encrypt encrypts plain, a file in format f, for age recipients, as
// "sops -e --age R --encrypted-regex X" does; an empty regex encrypts
// every value. It writes the tests' files and the example fleet's, with
// sops' own code; users run the sops CLI.
func Encrypt(f Format, plain []byte, recipients []string, encryptedRegex string) ([]byte, error) {
	s := storeFor(f)
	branches, err := s.LoadPlainFile(plain)
	if err != nil {
		return nil, err
	}
	masters, err := age.MasterKeysFromRecipients(strings.Join(recipients, ","))
	if err != nil {
		return nil, err
	}
	group := make(sops.KeyGroup, len(masters))
	for i, m := range masters {
		group[i] = keys.MasterKey(m)
	}
	tree := sops.Tree{Branches: branches, Metadata: sops.Metadata{
		KeyGroups:      []sops.KeyGroup{group},
		EncryptedRegex: encryptedRegex,
		Version:        "3.13.3",
	}}
	dataKey, errs := tree.GenerateDataKey()
	if len(errs) > 0 {
		return nil, fmt.Errorf("generating the data key: %v", errs)
	}
	cipher := aes.NewCipher()
	mac, err := tree.Encrypt(dataKey, cipher)
	if err != nil {
		return nil, err
	}
	tree.Metadata.LastModified = time.Now().UTC()
	if tree.Metadata.MessageAuthenticationCode, err = cipher.Encrypt(mac, dataKey, tree.Metadata.LastModified.Format(time.RFC3339)); err != nil {
		return nil, err
	}
	return s.EmitEncryptedFile(tree)
}
