package sopsfile

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"

	"filippo.io/age"
)

// withAgeKeys rewrites, in tried (what sops said of each key, "; "
// between them), what it said of the file's age recipients: a list of
// every place it looks, where the one that matters is the key file it
// read. It says instead which age keys are here and where each was found
// (their public keys, never the identities), so that a variable pointing
// at another key (a demo's SOPS_AGE_KEY_FILE) is named. A key command or
// an SSH key leaves sops's own words.
func withAgeKeys(tried string) string {
	for _, v := range []string{"SOPS_AGE_KEY_CMD", "SOPS_AGE_SSH_PRIVATE_KEY_FILE", "SOPS_AGE_SSH_PRIVATE_KEY_CMD"} {
		if os.Getenv(v) != "" {
			return tried
		}
	}
	var rest []string
	age := false
	for _, part := range strings.Split(tried, "; ") {
		if strings.HasPrefix(part, "age1") && (strings.Contains(part, "failed to load age identities") || strings.Contains(part, "did not match")) {
			age = true
			continue
		}
		rest = append(rest, part)
	}
	if !age {
		return tried
	}
	keys, looked := ageKeys()
	said := "age: no age key here (looked in " + strings.Join(looked, ", ") + ")"
	if len(keys) > 0 {
		said = "age: the keys here are " + strings.Join(keys, ", ") + ", and the file is not encrypted for any of them"
	}
	return strings.Join(append([]string{said}, rest...), "; ")
}

// ageKeys are the public keys of the age identities sops finds here, each
// with where it was found, and the places looked in.
func ageKeys() (keys, looked []string) {
	add := func(from string, data []byte) {
		ids, err := age.ParseIdentities(bytes.NewReader(data))
		if err != nil {
			keys = append(keys, "none in "+from+" (not an age key file)")
			return
		}
		for _, id := range ids {
			if x, ok := id.(*age.X25519Identity); ok {
				keys = append(keys, x.Recipient().String()+" (from "+from+")")
			}
		}
	}
	looked = append(looked, "$SOPS_AGE_KEY")
	if v := os.Getenv("SOPS_AGE_KEY"); v != "" {
		add("$SOPS_AGE_KEY", []byte(v))
	}
	file := os.Getenv("SOPS_AGE_KEY_FILE")
	if file == "" {
		if dir, err := os.UserConfigDir(); err == nil {
			file = filepath.Join(dir, "sops", "age", "keys.txt")
		}
	} else {
		looked = append(looked, "$SOPS_AGE_KEY_FILE")
	}
	if file != "" {
		looked = append(looked, file)
		from := file
		if os.Getenv("SOPS_AGE_KEY_FILE") != "" {
			from = "$SOPS_AGE_KEY_FILE=" + file
		}
		switch data, err := os.ReadFile(file); {
		case err == nil:
			add(from, data)
		case !os.IsNotExist(err) || os.Getenv("SOPS_AGE_KEY_FILE") != "":
			keys = append(keys, "none from "+from+" (cannot be read)")
		}
	}
	return keys, looked
}
