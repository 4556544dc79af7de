// Package sopsfile decrypts SOPS-encrypted files in memory as a render
// reads them, with getsops/sops' own stores, keysources and MAC check, and
// the keys the sops CLI would find (age, SSH, PGP, AWS KMS, GCP KMS, Azure
// Key Vault, Vault transit, HuaweiCloud KMS): nothing new to configure. A
// file is decrypted once per run however many clusters read it, never
// written back, and a file that carries no SOPS metadata is returned as
// it is, after one search for the word "sops".
package sopsfile

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/keyservice"
	sopslog "github.com/getsops/sops/v3/logging"
	"github.com/getsops/sops/v3/stores/dotenv"
	"github.com/getsops/sops/v3/stores/ini"
	sopsjson "github.com/getsops/sops/v3/stores/json"
	sopsyaml "github.com/getsops/sops/v3/stores/yaml"
	"google.golang.org/grpc"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/mask"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/memo"
)

// Format is how a file is encrypted, as the sops CLI decides it from the
// file's name.
type Format string

// The formats.
const (
	YAML   Format = "yaml"
	JSON   Format = "json"
	Dotenv Format = "dotenv"
	INI    Format = "ini"
	Binary Format = "binary"
)

// FormatOf is the format sops gives a file of this name: .yaml and .yml
// are YAML, .json JSON, .env dotenv, .ini INI, anything else binary.
func FormatOf(path string) Format {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		return YAML
	case ".json":
		return JSON
	case ".env":
		return Dotenv
	case ".ini":
		return INI
	}
	return Binary
}

// The marks of SOPS metadata in each format: a top-level "sops" key, the
// flattened "sops_" keys of dotenv, the [sops] section of INI. Any of
// them makes a file encrypted, whatever else it lacks: a file whose MAC
// was removed is refused, not read as plain (its ciphertext would be
// applied as the values).
var (
	yamlMark   = regexp.MustCompile(`(?m)^sops:`)
	jsonMark   = regexp.MustCompile(`"sops"\s*:`)
	dotenvMark = regexp.MustCompile(`(?m)^sops_[A-Za-z0-9_]*=`)
	iniMark    = regexp.MustCompile(`(?m)^\[sops\]\s*$`)
)

// Encrypted reports whether data, read from a file in format f, carries
// SOPS metadata. A file without the word "sops" costs one search.
func Encrypted(f Format, data []byte) bool {
	if !bytes.Contains(data, []byte("sops")) {
		return false
	}
	switch f {
	case YAML:
		return yamlMark.Match(data)
	case Dotenv:
		return dotenvMark.Match(data)
	case INI:
		return iniMark.Match(data)
	case Binary:
		return bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) && topLevelSops(data)
	}
	return topLevelSops(data)
}

// topLevelSops reports whether JSON data is an object with a "sops" key:
// a JSON file that only mentions sops in a nested object or a string is
// plain.
func topLevelSops(data []byte) bool {
	if !jsonMark.Match(data) {
		return false
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		// Not one JSON object: sops' store says why, naming the file.
		return bytes.HasPrefix(bytes.TrimSpace(data), []byte("{"))
	}
	_, ok := top["sops"]
	return ok
}

// secretManifest reports whether an encrypted file is a Kubernetes Secret
// manifest, which a decryptor in the cluster (Flux) decrypts as it is.
func secretManifest(f Format, data []byte) bool {
	switch f {
	case YAML:
		return secretYAML.Match(data)
	case JSON:
		return secretJSON.Match(data)
	}
	return false
}

var (
	secretYAML = regexp.MustCompile(`(?m)^kind:\s*Secret\s*$`)
	secretJSON = regexp.MustCompile(`"kind"\s*:\s*"Secret"`)
)

func init() {
	// sops logs each key it tries on standard error; what failed reaches
	// the caller in the error instead, with its file.
	for _, l := range sopslog.Loggers {
		l.SetOutput(io.Discard)
	}
}

// Decrypter decrypts files for one run and remembers each, by content:
// a values file read for 100 clusters is decrypted once. It is safe for
// concurrent use.
type Decrypter struct {
	// KeysOptional reads a file no key here decrypts as it is, encrypted,
	// and lists it in Undecrypted (vet and render in a job without keys);
	// otherwise it is an error. A file that is not what its MAC says is
	// an error either way.
	KeysOptional bool
	// Off reads an encrypted Secret manifest as it is, for a decryptor in
	// the cluster (Flux), and refuses any other encrypted file, which feeds
	// the render and would come out of it neither encrypted nor decrypted
	// (render --output-dir without --decrypt).
	Off bool
	// Keys are the key services asked; nil is the local one, which finds
	// keys as the sops CLI does.
	Keys []keyservice.KeyServiceClient
	// KeyTimeout bounds each key service's answer, so that a KMS that
	// does not answer fails the file instead of hanging the run; 0 is
	// DefaultKeyTimeout.
	KeyTimeout time.Duration

	// Mask receives every decrypted value, for the run's printers to
	// mask; nil: one of the Decrypter's own (Sensitive).
	Mask *mask.Set

	files memo.Memo[content, []byte]
	mu    sync.Mutex
	seen  map[string]*File
}

// File is an encrypted file the run read.
type File struct {
	// Path is the file as first read.
	Path string
	// Recipients are the keys it is encrypted for, "age age1…".
	Recipients []string
	// Decrypted is false when no key here decrypted it (KeysOptional).
	Decrypted bool
	// Reason is why it was not decrypted.
	Reason string
	// TimedOut: a key service or key command did not answer in time.
	TimedOut bool
	mac      string
}

// NoKey says that no key here decrypts f (or that the keys did not
// answer in time), and which keys it is encrypted for.
func (f File) NoKey() string {
	if f.TimedOut {
		return f.Path + " is encrypted with SOPS for " + strings.Join(f.Recipients, ", ") + " and its key did not answer in time (" + f.Reason + ")"
	}
	said := f.Path + " is encrypted with SOPS for " + strings.Join(f.Recipients, ", ") + " and no key here decrypts it"
	if age, _, _ := strings.Cut(f.Reason, "; "); strings.HasPrefix(age, "age: the keys here are ") {
		said += " (" + age + ")" // keys that are here but not its: which, and from where (withAgeKeys)
	}
	return said
}

// Read returns data, read from path, decrypted if it carries SOPS
// metadata; anything else is returned as it is.
func (d *Decrypter) Read(path string, data []byte) ([]byte, error) {
	return d.ReadAs(path, FormatOf(path), data)
}

// ReadAs is Read for data in format f, whatever its name.
func (d *Decrypter) ReadAs(path string, f Format, data []byte) ([]byte, error) {
	out, _, err := d.Open(path, f, data)
	return out, err
}

// Open is ReadAs, and whether data's values are SOPS-encrypted ones
// not left encrypted for a decryptor in the cluster: out holds them
// decrypted or, where no key here opens data (KeysOptional: vet
// without the keys), apply's would. That is the provenance a render
// keeps, so that whatever form such a value takes in it (re-encoded,
// re-indented, part of a longer string), the render is known to hold
// one.
func (d *Decrypter) Open(path string, f Format, data []byte) (out []byte, decrypted bool, err error) {
	if d == nil || !Encrypted(f, data) {
		return data, false, nil
	}
	if d.Off {
		if !secretManifest(f, data) {
			return nil, false, &Error{path, "it feeds the render (a generator's input, a values file, an import), so it cannot be left encrypted for a decryptor in the cluster, which decrypts only Secret manifests encrypted whole; --decrypt writes its values decrypted"}
		}
		d.note(path, "", nil, false, "left encrypted")
		return data, false, nil
	}
	key := content{sha256.Sum256(data), f}
	out, err = d.files.Do(key, func() ([]byte, error) { return d.decrypt(path, f, data) })
	var nk *NoKeyError
	switch {
	case errors.As(err, &nk) && d.KeysOptional:
		d.note(path, nk.mac, nk.Recipients, false, nk.Tried)
		if nk.TimedOut {
			d.mu.Lock()
			if f := d.seen[path]; f != nil {
				f.TimedOut = true
			}
			d.mu.Unlock()
		}
		return data, true, nil
	case err != nil:
		return nil, false, err
	}
	d.note(path, "", nil, true, "")
	return out, true, nil
}

// content is what a decryption is remembered by: the same bytes read
// in the same format decrypt the same.
type content struct {
	sum    [sha256.Size]byte
	format Format
}

// note records an encrypted file read, once per path, and once per MAC
// (a file, and the Secret kustomize built of it, are one).
func (d *Decrypter) note(path, mac string, recipients []string, decrypted bool, reason string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.seen == nil {
		d.seen = map[string]*File{}
	}
	if f, ok := d.seen[path]; ok {
		f.Decrypted = f.Decrypted && decrypted
		return
	}
	for _, f := range d.seen {
		if mac != "" && f.mac == mac {
			return
		}
	}
	d.seen[path] = &File{Path: path, Recipients: recipients, Decrypted: decrypted, Reason: reason, mac: mac}
}

// Files are the encrypted files read so far, by path.
func (d *Decrypter) Files() []File {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]File, 0, len(d.seen))
	for _, f := range d.seen {
		out = append(out, *f)
	}
	slices.SortFunc(out, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// Undecrypted are the encrypted files read as they are.
func (d *Decrypter) Undecrypted() []File {
	var out []File
	for _, f := range d.Files() {
		if !f.Decrypted {
			out = append(out, f)
		}
	}
	return out
}

// leaves are a tree's leaf values, in order; decryption keeps the order.
func leaves(branches sops.TreeBranches) []any {
	var out []any
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case sops.TreeBranch:
			for _, item := range v {
				walk(item.Value)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		default:
			out = append(out, v)
		}
	}
	for _, b := range branches {
		walk(b)
	}
	return out
}

// remember adds the values that were encrypted to the run's mask:
// strings, numbers and booleans, however short (mask.Set's rules say
// where each is masked).
func (d *Decrypter) remember(before, after []any) {
	if len(before) != len(after) {
		return
	}
	m := d.Sensitive()
	for i, b := range before {
		if enc, _ := b.(string); strings.HasPrefix(enc, "ENC[") {
			m.Add(after[i])
		}
	}
}

// Sensitive is the run's mask: every value decrypted so far (Mask, else
// one of the Decrypter's own).
func (d *Decrypter) Sensitive() *mask.Set {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.Mask == nil {
		d.Mask = &mask.Set{}
	}
	return d.Mask
}

// Values are the decrypted values of mask.MinText bytes or more.
func (d *Decrypter) Values() []string { return d.Sensitive().Values() }

// Redact masks every decrypted value in s, and its base64 form (a
// Secret's data): the last guard of error messages, which should never
// quote a value.
func (d *Decrypter) Redact(s string) string { return d.Sensitive().String(s) }

// storeFor is sops' store for a format, with the sops CLI's defaults.
func storeFor(f Format) sops.Store {
	c := config.NewStoresConfig()
	switch f {
	case YAML:
		return sopsyaml.NewStore(&c.YAML)
	case Dotenv:
		return dotenv.NewStore(&c.Dotenv)
	case INI:
		return ini.NewStore(&c.INI)
	case Binary:
		return sopsjson.NewBinaryStore(&c.JSONBinary)
	}
	return sopsjson.NewStore(&c.JSON)
}

// decrypt is what "sops -d" does: load, get the data key from the key
// services, decrypt, and check the MAC; its errors name the file and
// never hold a value.
func (d *Decrypter) decrypt(path string, f Format, data []byte) ([]byte, error) {
	s := storeFor(f)
	tree, err := s.LoadEncryptedFile(data)
	if err != nil {
		return nil, &Error{path, fmt.Sprintf("not a SOPS %s file: %s", f, safeMessage(err))}
	}
	if tree.Metadata.MessageAuthenticationCode == "" {
		return nil, &Error{path, "it has SOPS metadata but no MAC (was its mac removed?), so nothing proves it is what was encrypted; edit it with \"sops " + path + "\", which re-encrypts it"}
	}
	services := d.Keys
	if services == nil {
		services = []keyservice.KeyServiceClient{keyservice.NewLocalClient()}
	}
	keys := make([]keyservice.KeyServiceClient, len(services))
	for i, k := range services {
		keys[i] = &bounded{KeyServiceClient: k, timeout: cmp.Or(d.KeyTimeout, KeyTimeout())}
	}
	dataKey, err := tree.Metadata.GetDataKeyWithKeyServices(keys, nil)
	if err != nil {
		why, timedOut := explainKeyCommands(withAgeKeys(tried(err)))
		timedOut = timedOut || strings.Contains(why, keyServiceTimeout)
		return nil, &NoKeyError{Path: path, Recipients: Recipients(tree.Metadata), Tried: why, TimedOut: timedOut, mac: tree.Metadata.MessageAuthenticationCode}
	}
	cipher := aes.NewCipher()
	before := leaves(tree.Branches)
	mac, err := tree.Decrypt(dataKey, cipher)
	if err != nil {
		return nil, &Error{path, safeMessage(err)}
	}
	stored, err := cipher.Decrypt(tree.Metadata.MessageAuthenticationCode, dataKey, tree.Metadata.LastModified.Format(time.RFC3339))
	if err != nil || stored != mac {
		return nil, &Error{path, fmt.Sprintf("the file is not what its MAC says: it was changed after it was encrypted (edited by hand?); edit it with \"sops %s\", which re-encrypts it", path)}
	}
	out, err := s.EmitPlainFile(tree.Branches)
	if err != nil {
		return nil, &Error{path, safeMessage(err)}
	}
	d.remember(before, leaves(tree.Branches))
	return out, nil
}

// keyServiceTimeout starts what a key service that did not answer says.
const keyServiceTimeout = "the key service did not answer in"

// DefaultKeyTimeout is how long a key service may take to decrypt a
// file's data key: a KMS a network away, a SOPS_AGE_KEY_CMD.
const DefaultKeyTimeout = time.Minute

// KeyTimeoutEnv sets the key services' time limit (a Go duration) in
// place of DefaultKeyTimeout.
const KeyTimeoutEnv = "KUBECTL_FLEET_KEY_TIMEOUT"

// KeyTimeout is $KUBECTL_FLEET_KEY_TIMEOUT, else DefaultKeyTimeout.
func KeyTimeout() time.Duration {
	if d, err := time.ParseDuration(os.Getenv(KeyTimeoutEnv)); err == nil && d > 0 {
		return d
	}
	return DefaultKeyTimeout
}

// bounded is a key service whose Decrypt gives up after timeout: sops
// asks its key services without a deadline (context.Background), and a
// local key service's KMS calls take the context they are given. The
// call given up on ends on its own.
type bounded struct {
	keyservice.KeyServiceClient
	timeout time.Duration
}

// Decrypt implements keyservice.KeyServiceClient.
func (b *bounded) Decrypt(ctx context.Context, in *keyservice.DecryptRequest, opts ...grpc.CallOption) (*keyservice.DecryptResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	type answer struct {
		out *keyservice.DecryptResponse
		err error
	}
	done := make(chan answer, 1)
	go func() {
		out, err := b.KeyServiceClient.Decrypt(ctx, in, opts...)
		done <- answer{out, err}
	}()
	select {
	case a := <-done:
		return a.out, a.err
	case <-ctx.Done():
		return nil, fmt.Errorf("%s %v", keyServiceTimeout, b.timeout)
	}
}

// tried is what each key of a failed GetDataKey said, "age1…: failed to
// load age identities…": sops keeps the keys' errors in an exported field
// of an unexported type, which its Error does not print.
func tried(err error) string {
	v := reflect.ValueOf(err)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct || !v.FieldByName("GroupResults").IsValid() {
		return err.Error()
	}
	var out []string
	for _, group := range v.FieldByName("GroupResults").Interface().([]error) {
		keys := reflect.ValueOf(group)
		if group == nil || keys.Kind() != reflect.Slice {
			if group != nil {
				out = append(out, group.Error())
			}
			continue
		}
		for i := range keys.Len() {
			if e, ok := keys.Index(i).Interface().(error); ok && e != nil {
				msg := strings.TrimPrefix(e.Error(), "error decrypting key ")
				out = append(out, strings.NewReplacer(": [", ": ", "]", "").Replace(msg))
			}
		}
	}
	return strings.Join(out, "; ")
}

// safeMessage is an error's lines on one line. sops' store and cipher
// errors speak of the metadata and the structure, whose values are
// encrypted, never of a decrypted value.
func safeMessage(err error) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", " ")), " ")
}

// Recipients are the keys a file is encrypted for, "age age1…", in its
// key groups' order.
func Recipients(m sops.Metadata) []string {
	var out []string
	for _, g := range m.KeyGroups {
		for _, k := range g {
			out = append(out, k.TypeToIdentifier()+" "+k.ToString())
		}
	}
	return out
}

// Error is why an encrypted file could not be read, other than a missing
// key: it is not what its MAC says, or not SOPS.
type Error struct {
	Path, Reason string
}

func (e *Error) Error() string { return e.Path + ": SOPS: " + e.Reason }

// Failed reports whether err is a file's decryption failing.
func Failed(err error) bool {
	return errors.As(err, new(*Error)) || errors.As(err, new(*NoKeyError))
}

// NoKeyError is a file no key here decrypts: which keys it is encrypted
// for, and what was tried.
type NoKeyError struct {
	Path       string
	Recipients []string
	Tried      string
	// TimedOut is true when a key service or key command did not answer
	// in time: the key may well be there.
	TimedOut bool
	mac      string
}

func (e *NoKeyError) Error() string {
	if e.TimedOut {
		return fmt.Sprintf("%s is encrypted with SOPS and it could not be decrypted in time; it is encrypted for %s; tried: %s",
			e.Path, strings.Join(e.Recipients, ", "), e.Tried)
	}
	return fmt.Sprintf("%s is encrypted with SOPS and no key here decrypts it; it is encrypted for %s; tried: %s (keys are found where the sops CLI finds them)",
		e.Path, strings.Join(e.Recipients, ", "), e.Tried)
}
