package publish

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
)

// Scheme prefixes a registry repository in the fleet file, as in Flux.
const Scheme = "oci://"

// Registry is where a delivery publishes: a repository base
// ("registry.example.com/fleets/prod") under which each app has its
// repository, and each cluster its tag.
type Registry struct {
	// Base is the repository base, without Scheme.
	Base string
	// Insecure allows plain HTTP (a registry on loopback).
	Insecure bool
	// Keychain finds credentials: the Docker config and its credential
	// helpers, as crane and flux find them, when nil.
	Keychain authn.Keychain
	// Transport, when not nil, sends the requests.
	Transport http.RoundTripper
	// Records signs the records written and verifies those read, when
	// the delivery signs; nil: records are plain JSON (RecordKeys).
	Records *RecordKeys

	// conns are the registry's connections, shared by its copies (nil:
	// each request authenticates on its own).
	conns *conns
}

// conns keep what a registry's requests can share: each repository is
// pinged (GET /v2/, and for an insecure one an HTTPS attempt first) and
// its token fetched once, not before every request, and a blob pushed
// once is not looked for again. Made at the first request, from the
// Registry's Keychain and Transport then.
type conns struct {
	once   sync.Once
	puller *remote.Puller
	pusher *remote.Pusher
	err    error
	made   time.Time
	// deleters are the clients that delete tags (Untag), one per
	// repository: go-containerregistry's remote.Delete pings and asks a
	// token with the delete scope on each call, two requests for every
	// revision the history limit drops.
	mu       sync.Mutex
	deleters map[string]*http.Client
}

// connsMaxAge is how long the process shares a registry's connections
// (sharedConns): a reconcile that runs for weeks starts again from a
// ping now and then, and does not trust for longer that a blob it pushed
// is still there (a registry may collect it once untagged).
const connsMaxAge = 10 * time.Minute

var (
	sharedMu sync.Mutex
	shared   = map[string]*conns{}
)

// ForgetConnections drops the connections the process shares
// (sharedConns): what follows pings and authenticates again, as a new
// process would. For tests that count requests.
func ForgetConnections() {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	clear(shared)
}

// sharedConns are the connections the process shares to the registry
// host of base: every Registry of a run (one per command that reads or
// writes the same delivery) pings and authenticates once.
func sharedConns(base string, insecure bool) *conns {
	host, _, _ := strings.Cut(base, "/")
	k := host + "|" + strconv.FormatBool(insecure)
	sharedMu.Lock()
	defer sharedMu.Unlock()
	c, ok := shared[k]
	if !ok || time.Since(c.made) > connsMaxAge {
		c = &conns{made: time.Now()}
		shared[k] = c
	}
	return c
}

// ParseRegistry reads an oci:// URL of the fleet file (fleet.ParseOCI).
func ParseRegistry(url string, insecure bool) (Registry, error) {
	if err := fleet.ParseOCI(url); err != nil {
		return Registry{}, err
	}
	return Registry{Base: strings.TrimSuffix(strings.TrimPrefix(url, Scheme), "/"), Insecure: insecure, conns: &conns{}}, nil
}

// For is the registry a delivery of fleet f publishes to; its records
// are signed with the delivery's key when it has one (KeysOf).
func For(f *fleet.Fleet, d *fleet.Delivery) (Registry, error) {
	r, err := ParseRegistry(d.OCI, d.Insecure)
	r.Records = KeysOf(f, d.Signing)
	return r, err
}

// Repository is app's repository.
func (r Registry) Repository(app string) (name.Repository, error) {
	var opts []name.Option
	if r.Insecure {
		opts = append(opts, name.Insecure)
	}
	return name.NewRepository(r.Base+"/"+app, append(opts, name.StrictValidation)...)
}

// keychain is where the registry's credentials come from: the test's,
// or Docker's and the cloud helpers' (authn.DefaultKeychain).
func (r Registry) keychain() authn.Keychain {
	return cmp.Or[authn.Keychain](r.Keychain, authn.DefaultKeychain)
}

func (r Registry) options(ctx context.Context) []remote.Option {
	opts := []remote.Option{remote.WithAuthFromKeychain(r.keychain()), remote.WithUserAgent("kubectl-fleet"), remote.WithTransport(TransportFor(r.Transport, r.Insecure))}
	if c := r.connections(); c != nil {
		c.once.Do(func() {
			if c.puller, c.err = remote.NewPuller(opts...); c.err == nil {
				c.pusher, c.err = remote.NewPusher(opts...)
			}
		})
		if c.err == nil {
			opts = append(opts, remote.Reuse(c.puller), remote.Reuse(c.pusher))
		}
	}
	return append(opts, remote.WithContext(ctx))
}

// connections are the registry's connections: the process's, shared by
// every Registry of the same host, unless a test's Keychain or Transport
// makes them its own; nil for a Registry made without ParseRegistry.
func (r Registry) connections() *conns {
	if r.conns != nil && r.Keychain == nil && r.Transport == nil {
		return sharedConns(r.Base, r.Insecure)
	}
	return r.conns
}

// TransportFor is the transport to a registry: base (nil: go-
// containerregistry's default), which refuses plain HTTP unless
// insecure, or to a loopback address (an IP literal, or localhost),
// which never leaves the machine. go-containerregistry falls back to
// plain HTTP for a registry on a private (RFC 1918) or .local address, or
// any name under localhost, when HTTPS fails, sending the request, and
// its Basic credentials, in the clear: only a delivery or source that
// says insecure: true may.
func TransportFor(base http.RoundTripper, insecure bool) http.RoundTripper {
	if base == nil {
		base = remote.DefaultTransport
	}
	if insecure {
		return base
	}
	return httpsOnly{base}
}

// httpsOnly refuses every request that is not HTTPS.
type httpsOnly struct{ next http.RoundTripper }

func (h httpsOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" && !Loopback(req.URL.Hostname()) {
		return nil, fmt.Errorf("refusing plain HTTP to %s: say insecure: true for a registry without TLS", req.URL.Host)
	}
	return h.next.RoundTrip(req)
}

// Push writes img to app's repository by digest (blobs the registry has
// already are not sent again), and returns the digest. No tag moves.
func (r Registry) Push(ctx context.Context, app string, img v1.Image) (v1.Hash, error) {
	repo, err := r.Repository(app)
	if err != nil {
		return v1.Hash{}, err
	}
	d, err := img.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	if err := remote.Write(repo.Digest(d.String()), img, r.options(ctx)...); err != nil {
		return v1.Hash{}, fmt.Errorf("pushing to %s: %w", repo, Plain(err))
	}
	return d, nil
}

// Tag moves app's tag tag to the artifact d, already pushed.
func (r Registry) Tag(ctx context.Context, app, tag string, d v1.Hash) error {
	repo, err := r.Repository(app)
	if err != nil {
		return err
	}
	opts := r.options(ctx)
	desc, err := remote.Get(repo.Digest(d.String()), opts...)
	if err != nil {
		return fmt.Errorf("reading %s@%s: %w", repo, d, Plain(err))
	}
	if err := remote.Tag(repo.Tag(tag), desc, opts...); err != nil {
		return fmt.Errorf("tagging %s:%s: %w", repo, tag, Plain(err))
	}
	return nil
}

// TagPushed is Tag for an artifact whose manifest is known (this run
// pushed it: Pushes.Manifest), written under the tag without reading it
// back first; a manifest that is not d's (or none) goes the way of Tag.
func (r Registry) TagPushed(ctx context.Context, app, tag string, d v1.Hash, manifest []byte) error {
	if manifest == nil {
		return r.Tag(ctx, app, tag, d)
	}
	m, err := v1.ParseManifest(bytes.NewReader(manifest))
	if h, _, herr := v1.SHA256(bytes.NewReader(manifest)); err != nil || herr != nil || h != d || m.MediaType == "" {
		return r.Tag(ctx, app, tag, d)
	}
	repo, err := r.Repository(app)
	if err != nil {
		return err
	}
	if err := remote.Put(repo.Tag(tag), rawManifest{manifest, m.MediaType}, r.options(ctx)...); err != nil {
		return fmt.Errorf("tagging %s:%s: %w", repo, tag, Plain(err))
	}
	return nil
}

// rawManifest is a manifest as bytes, and its media type.
type rawManifest struct {
	raw       []byte
	mediaType types.MediaType
}

func (m rawManifest) RawManifest() ([]byte, error)        { return m.raw, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return m.mediaType, nil }

// Untag deletes app's tag tag (the artifact stays, under its digest and
// any other tag). A registry may refuse to delete tags: its error says
// so.
func (r Registry) Untag(ctx context.Context, app, tag string) error {
	repo, err := r.Repository(app)
	if err != nil {
		return err
	}
	if err := r.delete(ctx, repo.Tag(tag)); err != nil {
		return fmt.Errorf("deleting the tag %s:%s: %w", repo, tag, Plain(err))
	}
	return nil
}

// delete deletes ref's manifest, as remote.Delete does, through the
// repository's delete client, made once per connections (deleter).
func (r Registry) delete(ctx context.Context, ref name.Tag) error {
	client, err := r.deleter(ctx, ref.Context())
	if err != nil {
		return err
	}
	u := url.URL{Scheme: ref.Context().Scheme(), Host: ref.Context().RegistryStr(), Path: fmt.Sprintf("/v2/%s/manifests/%s", ref.Context().RepositoryStr(), ref.Identifier())}
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return transport.CheckError(resp, http.StatusOK, http.StatusAccepted)
}

// deleter is repo's client with the delete scope: pinged and
// authenticated once, then kept with the registry's connections (a
// test's Registry keeps its own).
func (r Registry) deleter(ctx context.Context, repo name.Repository) (*http.Client, error) {
	c := r.connections()
	if c != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		if d := c.deleters[repo.String()]; d != nil {
			return d, nil
		}
	}
	auth, err := authn.Resolve(ctx, r.keychain(), repo)
	if err != nil {
		return nil, err
	}
	base := transport.NewUserAgent(TransportFor(r.Transport, r.Insecure), "kubectl-fleet")
	tr, err := transport.NewWithContext(ctx, repo.Registry, auth, base, []string{repo.Scope(transport.DeleteScope)})
	if err != nil {
		return nil, err
	}
	// A delete is never redirected: its credentials go nowhere else.
	d := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if c != nil {
		if c.deleters == nil {
			c.deleters = map[string]*http.Client{}
		}
		c.deleters[repo.String()] = d
	}
	return d, nil
}

// Resolve is the digest app's tag points at; found is false when there
// is no such tag.
func (r Registry) Resolve(ctx context.Context, app, tag string) (d v1.Hash, found bool, err error) {
	repo, err := r.Repository(app)
	if err != nil {
		return v1.Hash{}, false, err
	}
	desc, err := remote.Head(repo.Tag(tag), r.options(ctx)...)
	switch {
	case notFound(err):
		return v1.Hash{}, false, nil
	case err != nil:
		return v1.Hash{}, false, fmt.Errorf("reading %s:%s: %w", repo, tag, Plain(err))
	}
	return desc.Digest, true, nil
}

// Tags are the tags of app's repository, every page of them; none when
// the repository does not exist.
func (r Registry) Tags(ctx context.Context, app string) ([]string, error) {
	repo, err := r.Repository(app)
	if err != nil {
		return nil, err
	}
	tags, err := remote.List(repo, r.options(ctx)...)
	switch {
	case notFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("listing the tags of %s: %w", repo, Plain(err))
	}
	return tags, nil
}

// notFound says whether err is a registry's 404: no such tag, manifest
// or repository.
func notFound(err error) bool {
	var te *transport.Error
	return errors.As(err, &te) && te.StatusCode == http.StatusNotFound
}

// Plain is a registry error said without what a transport error may
// carry of the request (never a credential: go-containerregistry keeps
// them in headers, which it does not print).
func Plain(err error) error {
	var te *transport.Error
	if errors.As(err, &te) && len(te.Errors) > 0 {
		var msgs []string
		for _, e := range te.Errors {
			msgs = append(msgs, string(e.Code)+": "+e.Message)
		}
		return fmt.Errorf("the registry answered %d: %s", te.StatusCode, strings.Join(msgs, "; "))
	}
	// A plain-HTTP registry (insecure) is tried over HTTPS first: that
	// attempt's error says nothing of what went wrong.
	const https = "http: server gave HTTP response to HTTPS client; "
	if msg := err.Error(); strings.Contains(msg, https) {
		return errors.New(strings.TrimSuffix(msg[strings.Index(msg, https)+len(https):], "; "))
	}
	return err
}

// Target is what one app renders for one cluster.
type Target struct {
	App, Cluster string
	Objects      []*unstructured.Unstructured
}

// Pushes push targets to a registry one at a time, from as many
// goroutines as the caller runs: each packed as it comes (Pack), so a
// caller that renders, pushes and lets go of one cluster after another
// holds only those in flight; an artifact two targets share is pushed
// once. Pushes move no tag, so nothing a cluster pulls changes: a
// rollout moves each cluster's tag (Tag) when its wave starts, and a run
// whose push fails leaves only unreferenced artifacts behind.
type Pushes struct {
	r      Registry
	origin Origin
	dryRun bool

	mu   sync.Mutex
	done map[pushKey]*push
}

type pushKey struct {
	app string
	d   v1.Hash
}

// push is one artifact's push, once.
type push struct {
	once     sync.Once
	err      error
	manifest []byte // as pushed
}

// Pushes are the pushes of a run to r, each artifact with origin in
// its annotations; a dry run packs and pushes nothing.
func (r Registry) Pushes(origin Origin, dryRun bool) *Pushes {
	return &Pushes{r: r, origin: origin, dryRun: dryRun, done: map[pushKey]*push{}}
}

// Registry is where p pushes.
func (p *Pushes) Registry() Registry { return p.r }

// Origin is what p's artifacts say they come from.
func (p *Pushes) Origin() Origin { return p.origin }

// Push packs t and pushes its artifact by digest, unless this run pushed
// it already, and returns its digest.
func (p *Pushes) Push(ctx context.Context, t Target) (v1.Hash, error) {
	img, err := Pack(t.Objects, p.origin)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("app %s for cluster %s: %w", t.App, t.Cluster, err)
	}
	d, err := img.Digest()
	if err != nil || p.dryRun {
		return d, err
	}
	k := pushKey{t.App, d}
	p.mu.Lock()
	once, ok := p.done[k]
	if !ok {
		once = &push{}
		p.done[k] = once
	}
	p.mu.Unlock()
	once.once.Do(func() {
		if _, once.err = p.r.Push(ctx, t.App, img); once.err == nil {
			once.manifest, once.err = img.RawManifest()
		}
	})
	if once.err != nil { // written in Do, read after it: ordered by the Once
		return v1.Hash{}, fmt.Errorf("app %s for cluster %s: %w", t.App, t.Cluster, once.err)
	}
	return d, nil
}

// Manifest is the manifest of app's artifact d as this run pushed it,
// nil when it did not (TagPushed).
func (p *Pushes) Manifest(app string, d v1.Hash) []byte {
	p.mu.Lock()
	once, ok := p.done[pushKey{app, d}]
	p.mu.Unlock()
	if !ok {
		return nil
	}
	once.once.Do(func() {}) // pushed, or failed, before it returns
	return once.manifest
}

// Short is a digest cut to what a person compares: sha256:0123456789ab.
func Short(d string) string {
	if len(d) > 19 {
		return d[:19]
	}
	return d
}

// Loopback reports whether host (without a port) is this machine's
// loopback: an IP literal in 127.0.0.0/8 or ::1, or exactly localhost
// (a name under it may resolve anywhere).
func Loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
