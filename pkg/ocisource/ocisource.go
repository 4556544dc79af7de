// Package ocisource reads sources (a kustomize base, a folder of
// manifests, a jsonnet library) from OCI registries, as Flux, Timoni and
// Argo CD read them: an oci:// reference is resolved to its digest once
// per run, its signature checked when a key is given (cosign's format,
// what publish signs), and the artifact unpacked, hostile archives
// refused first, into a folder named by its digest in the cache, where a
// later run finds it with no network.
package ocisource

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/memo"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
)

// Scheme starts a source's reference.
const Scheme = "oci://"

// Is reports whether a source path is an OCI reference.
func Is(s string) bool { return strings.HasPrefix(s, Scheme) }

// The formats read: Flux's (flux push artifact), Timoni's, and a plain
// image of one tar+gzip layer.
const (
	TimoniConfigMediaType  types.MediaType = "application/vnd.timoni.config.v1+json"
	TimoniContentMediaType types.MediaType = "application/vnd.timoni.content.v1.tar+gzip"
)

// Spec is one source to fetch.
type Spec struct {
	// Ref is oci://host/repository:tag or oci://host/repository@sha256:….
	Ref string
	// Digest, when set, pins the artifact (fleet.lock): the tag is not
	// resolved, and an artifact in the cache needs no network.
	Digest string
	// Insecure reaches the registry over plain HTTP (loopback always is).
	Insecure bool
	// Key, when set, is the PEM public key the artifact must be signed
	// with (cosign's format), KeyName how messages name it.
	Key     []byte
	KeyName string
}

// Fetched is a source in a local folder.
type Fetched struct {
	// Dir is the artifact's content, unpacked; read only.
	Dir string
	// Ref is the artifact pinned: oci://host/repository@sha256:….
	Ref string
	// Digest is its manifest's digest; Format "flux", "timoni" or
	// "tarball"; SignedBy the key that verified it ("" for none asked).
	Digest   string
	Format   string
	SignedBy string
}

// Fetcher fetches sources, each reference once per run.
type Fetcher struct {
	// CacheDir keeps unpacked artifacts by digest; "" is a folder of the
	// process's own, removed by Close.
	CacheDir string
	// Keychain finds registry credentials (default: the Docker config and
	// its credential helpers, as crane and flux find them).
	Keychain authn.Keychain
	// Limits bound an artifact (default DefaultLimits).
	Limits    Limits
	Transport http.RoundTripper

	fetched memo.Memo[string, Fetched]
	tmp     string
}

// CacheDir is where artifacts are kept: $KUBECTL_FLEET_OCI_CACHE, else
// kubectl-fleet-oci in kubectl's --cache-dir when given (kubectlCache),
// else kubectl-fleet/oci in the user's cache folder.
func CacheDir(kubectlCache string) string {
	if dir := os.Getenv("KUBECTL_FLEET_OCI_CACHE"); dir != "" {
		return dir
	}
	if kubectlCache != "" {
		return filepath.Join(kubectlCache, "kubectl-fleet-oci")
	}
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "kubectl-fleet", "oci")
	}
	return ""
}

// Close removes what a Fetcher without a cache unpacked.
func (f *Fetcher) Close() error {
	if f.tmp == "" {
		return nil
	}
	return os.RemoveAll(f.tmp)
}

// Fetch resolves, verifies and unpacks s, once per reference, digest and
// key for the Fetcher's life: every cluster renders the same artifact.
func (f *Fetcher) Fetch(ctx context.Context, s Spec) (Fetched, error) {
	key := s.Ref + "\x00" + s.Digest + "\x00" + string(s.Key)
	return f.fetched.Do(key, func() (Fetched, error) {
		out, err := f.fetch(ctx, s)
		if err != nil {
			return Fetched{}, fmt.Errorf("%s: %w", s.Ref, err)
		}
		return out, nil
	})
}

func (f *Fetcher) fetch(ctx context.Context, s Spec) (Fetched, error) {
	ref, err := Parse(s.Ref, s.Insecure)
	if err != nil {
		return Fetched{}, err
	}
	repo := ref.Context()
	opts := f.options(ctx, s.Insecure)
	d, err := f.digestOf(ref, s.Digest, opts)
	if err != nil {
		return Fetched{}, err
	}
	out := Fetched{Ref: Scheme + repo.Name() + "@" + d.String(), Digest: d.String()}
	root, err := f.root()
	if err != nil {
		return Fetched{}, err
	}
	out.Dir = filepath.Join(root, d.Algorithm, d.Hex)
	marker := out.Dir + ".json"
	if m, ok := readMarker(marker); ok && (s.Key == nil || slices.Contains(m.Keys, fingerprint(s.Key))) {
		// In the cache, verified with this key if one is asked: read
		// again by its digest, the folder unpacked again if someone
		// changed it; pulled again if the blobs are not whole.
		if format, layers, whole := cachedLayers(out.Dir, d); whole {
			entries, err := check(layers, f.limits())
			if err != nil {
				return Fetched{}, fmt.Errorf("%s: %w", d, err)
			}
			if err := place(out.Dir, entries); err != nil {
				return Fetched{}, err
			}
			out.Format, out.SignedBy = format, s.KeyName
			if s.Key == nil {
				out.SignedBy = ""
			}
			return out, nil
		}
	}
	if s.Key != nil {
		if err := verify(repo, d, s.Key, opts); err != nil {
			return Fetched{}, fmt.Errorf("%s: verify: %w (wanted a signature by %s)", d, err, s.KeyName)
		}
		out.SignedBy = s.KeyName
	}
	img, err := remote.Image(repo.Digest(d.String()), opts...)
	if err != nil {
		return Fetched{}, publish.Plain(err)
	}
	format, layers, err := f.layers(img)
	if err != nil {
		return Fetched{}, err
	}
	out.Format = format
	entries, err := check(layers, f.limits())
	if err != nil {
		return Fetched{}, fmt.Errorf("%s: %w", d, err)
	}
	if err := place(out.Dir, entries); err != nil {
		return Fetched{}, err
	}
	raw, err := img.RawManifest()
	if err != nil {
		return Fetched{}, publish.Plain(err)
	}
	manifest, err := img.Manifest()
	if err != nil {
		return Fetched{}, publish.Plain(err)
	}
	if err := keepBlobs(out.Dir, raw, manifest, layers); err != nil {
		return Fetched{}, err
	}
	m, _ := readMarker(marker)
	m.Format = format
	if s.Key != nil && !slices.Contains(m.Keys, fingerprint(s.Key)) {
		m.Keys = append(m.Keys, fingerprint(s.Key))
	}
	return out, writeMarker(marker, m)
}

// Parse reads an oci:// reference.
func Parse(s string, insecure bool) (name.Reference, error) {
	if !Is(s) {
		return nil, fmt.Errorf("not an oci:// reference")
	}
	var opts []name.Option
	if insecure {
		opts = append(opts, name.Insecure)
	}
	ref, err := name.ParseReference(strings.TrimPrefix(s, Scheme), append(opts, name.StrictValidation)...)
	if err != nil {
		return nil, fmt.Errorf("not a reference with a tag or a digest (oci://host/repository:tag or @sha256:…): %w", err)
	}
	return ref, nil
}

// digestOf is the digest s pins, the reference's own, or its tag's now.
func (f *Fetcher) digestOf(ref name.Reference, pinned string, opts []remote.Option) (v1.Hash, error) {
	own := ""
	if dg, ok := ref.(name.Digest); ok {
		own = dg.DigestStr()
	}
	switch {
	case pinned != "" && own != "" && pinned != own:
		return v1.Hash{}, fmt.Errorf("fleet.lock pins %s, the reference names %s", pinned, own)
	case pinned != "":
		return v1.NewHash(pinned)
	case own != "":
		return v1.NewHash(own)
	}
	desc, err := remote.Head(ref, opts...)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("resolving its tag: %w", publish.Plain(err))
	}
	return desc.Digest, nil
}

// maxLayers bounds the layers of a source.
const maxLayers = 128

// layers are the content layers of img, pulled and checked against
// their digests, and the format that says they are content.
func (f *Fetcher) layers(img v1.Image) (string, [][]byte, error) {
	m, err := img.Manifest()
	if err != nil {
		return "", nil, publish.Plain(err)
	}
	format := formatOf(m)
	if format == "" {
		found := make([]string, len(m.Layers))
		for i, l := range m.Layers {
			found[i] = string(l.MediaType)
		}
		return "", nil, fmt.Errorf("not a source kubectl fleet reads: config %s, layers [%s] (it reads Flux's artifacts, Timoni's, and images of one tar+gzip layer)", m.Config.MediaType, strings.Join(found, ", "))
	}
	lim := f.limits()
	// Bounded before anything is downloaded: the layers' count and their
	// sizes together (a manifest that lists one blob many times is
	// charged each time).
	var total int64
	for _, desc := range m.Layers {
		if total += desc.Size; desc.Size < 0 || total > lim.Compressed {
			return "", nil, fmt.Errorf("its layers are more than %d MiB together, refused", lim.Compressed>>20)
		}
	}
	if len(m.Layers) > maxLayers {
		return "", nil, fmt.Errorf("it has %d layers, more than %d: refused", len(m.Layers), maxLayers)
	}
	var out [][]byte
	for _, desc := range m.Layers {
		l, err := img.LayerByDigest(desc.Digest)
		if err != nil {
			return "", nil, publish.Plain(err)
		}
		rc, err := l.Compressed()
		if err != nil {
			return "", nil, publish.Plain(err)
		}
		data, err := io.ReadAll(io.LimitReader(rc, lim.Compressed+1))
		rc.Close()
		if err != nil {
			return "", nil, publish.Plain(err)
		}
		sum := sha256.Sum256(data)
		if got := "sha256:" + hex.EncodeToString(sum[:]); got != desc.Digest.String() {
			return "", nil, fmt.Errorf("a layer's content is %s, its manifest says %s: refused", got, desc.Digest)
		}
		out = append(out, data)
	}
	return format, out, nil
}

// formatOf is the format of an artifact's manifest, "" for none read.
func formatOf(m *v1.Manifest) string {
	all := func(mt ...types.MediaType) bool {
		for _, l := range m.Layers {
			if !slices.Contains(mt, l.MediaType) {
				return false
			}
		}
		return len(m.Layers) > 0
	}
	switch {
	case m.Config.MediaType == publish.ConfigMediaType && len(m.Layers) == 1 && all(publish.ContentMediaType):
		return "flux"
	case m.Config.MediaType == TimoniConfigMediaType && all(TimoniContentMediaType):
		return "timoni"
	case len(m.Layers) == 1 && all(types.OCILayer, types.DockerLayer, "application/tar+gzip", "application/vnd.oci.image.layer.v1.tar+gzip"):
		return "tarball"
	}
	return ""
}

// verify checks that a signature of d, in its cosign tag, verifies with
// key and names d.
func verify(repo name.Repository, d v1.Hash, key []byte, opts []remote.Option) error {
	sigs, err := publish.ReadSignatures(repo, d, opts)
	switch {
	case err != nil:
		return err
	case len(sigs) == 0:
		return fmt.Errorf("it is not signed (no %s:%s)", repo.Name(), publish.SignatureTag(d))
	}
	return publish.VerifySignatures(sigs, key, d, nil)
}

// place unpacks entries into dir, through a folder beside it renamed
// at the end: a dir that exists is whole. A dir that exists and holds
// anything but what entries do (someone changed it in the cache) is
// replaced.
func place(dir string, entries []entry) error {
	if _, err := os.Stat(dir); err == nil && folderTree(dir) == treeOf(entries) {
		return nil // another run unpacked it, as it is
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".unpacking-")
	if err != nil {
		return err
	}
	if err := write(tmp, entries); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	if _, err := os.Stat(dir); err == nil {
		// Moved aside first: a rename does not replace a folder.
		stale, err := os.MkdirTemp(filepath.Dir(dir), ".stale-")
		if err != nil {
			os.RemoveAll(tmp)
			return err
		}
		if err := os.Rename(dir, filepath.Join(stale, "d")); err != nil && !os.IsNotExist(err) {
			os.RemoveAll(tmp)
			os.RemoveAll(stale)
			return err
		}
		defer os.RemoveAll(stale)
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		if _, serr := os.Stat(dir); serr == nil && folderTree(dir) == treeOf(entries) {
			return nil // another run's, just as whole
		}
		return err
	}
	return nil
}

func (f *Fetcher) root() (string, error) {
	if f.CacheDir != "" {
		return f.CacheDir, nil
	}
	if f.tmp == "" {
		tmp, err := os.MkdirTemp("", "kubectl-fleet-oci-")
		if err != nil {
			return "", err
		}
		f.tmp = tmp
	}
	return f.tmp, nil
}

func (f *Fetcher) limits() Limits {
	if f.Limits == (Limits{}) {
		return DefaultLimits
	}
	return f.Limits
}

// options reach a source's registry: over HTTPS only, unless insecure
// (publish.TransportFor).
func (f *Fetcher) options(ctx context.Context, insecure bool) []remote.Option {
	kc := f.Keychain
	if kc == nil {
		kc = authn.DefaultKeychain
	}
	return []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(kc), remote.WithTransport(publish.TransportFor(f.Transport, insecure))}
}

func fingerprint(key []byte) string {
	sum := sha256.Sum256(bytes.TrimSpace(key))
	return hex.EncodeToString(sum[:])
}
