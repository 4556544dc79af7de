package publish

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// A delivered cluster's artifact is signed at its wave, when its tag is
// about to move, after every gate said yes: never ahead. The signed
// payload names, besides the artifact's digest, what the signature
// decides: the fleet, the cluster, the app and the release (revision;
// 0 for a delete), in cosign's optional annotations, which are signed
// with the rest. An artifact is signed once per key: clusters that get
// the same one (the same render) share its signature, whose claim names
// the release it was first signed for (a layer per cluster would grow
// its one signature manifest with the fleet: 10,000 clusters, 10,000
// layers, each push rewriting them all). Flux verifies a signature with
// the key; this project's own checks want one of this key that names the
// fleet and app, and take which cluster gets which artifact, and its
// objects' digest, from the signed history (records.go).

// The keys of a Claim in a payload's optional annotations.
const (
	claimFleet    = "dev.kubectl-fleet/fleet"
	claimCluster  = "dev.kubectl-fleet/cluster"
	claimApp      = "dev.kubectl-fleet/app"
	claimRevision = "dev.kubectl-fleet/revision"
	// claimRun is an artifact of nothing's own (Nothing).
	claimRun = "dev.kubectl-fleet/run"
)

// Claim is what a signature of an artifact decides: that the fleet's
// cluster gets it as the app's release Revision (0: a delete).
type Claim struct {
	Fleet, Cluster, App string
	Revision            int
}

func (c Claim) String() string {
	what := "revision " + strconv.Itoa(c.Revision)
	if c.Revision == 0 {
		what = "its delete"
	}
	return fmt.Sprintf("fleet %s, cluster %s, app %s, %s", c.Fleet, c.Cluster, c.App, what)
}

// optional is the claim as a payload's optional annotations.
func (c Claim) optional() map[string]any {
	return map[string]any{claimFleet: c.Fleet, claimCluster: c.Cluster, claimApp: c.App, claimRevision: strconv.Itoa(c.Revision)}
}

// ClaimOf reads the claim of a payload; ok is false when it has none.
func ClaimOf(p Payload) (c Claim, ok bool) {
	str := func(k string) string { s, _ := p.Optional[k].(string); return s }
	n, err := strconv.Atoi(str(claimRevision))
	c = Claim{Fleet: str(claimFleet), Cluster: str(claimCluster), App: str(claimApp), Revision: n}
	return c, err == nil && c.Fleet != "" && c.Cluster != "" && c.App != ""
}

// maxSignatures bounds the layers of a signature manifest read back.
const maxSignatures = 1000

// maxPayload bounds one signature payload read back.
const maxPayload = 1 << 20

// Signature is one layer of an artifact's signature manifest.
type Signature struct {
	Payload []byte
	Sig     string // base64, as cosign writes it
}

// Signatures reads the signatures of app's artifact d (none: no
// signature tag), each layer's payload bounded by maxPayload.
func (r Registry) Signatures(ctx context.Context, app string, d v1.Hash) ([]Signature, error) {
	repo, err := r.Repository(app)
	if err != nil {
		return nil, err
	}
	return ReadSignatures(repo, d, r.options(ctx))
}

// ReadSignatures reads the signatures of d in repo (none: no signature
// tag).
func ReadSignatures(repo name.Repository, d v1.Hash, opts []remote.Option) ([]Signature, error) {
	img, err := remote.Image(repo.Tag(SignatureTag(d)), opts...)
	switch {
	case notFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading the signatures of %s@%s: %w", repo, d, Plain(err))
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, Plain(err)
	}
	if len(m.Layers) > maxSignatures {
		return nil, fmt.Errorf("%s:%s has %d signatures, more than %d", repo, SignatureTag(d), len(m.Layers), maxSignatures)
	}
	var out []Signature
	for _, desc := range m.Layers {
		sig, ok := desc.Annotations[SignatureAnnotation]
		if !ok || desc.Size > maxPayload {
			continue
		}
		l, err := img.LayerByDigest(desc.Digest)
		if err != nil {
			return nil, Plain(err)
		}
		rc, err := l.Compressed()
		if err != nil {
			return nil, Plain(err)
		}
		payload, err := io.ReadAll(io.LimitReader(rc, maxPayload))
		rc.Close()
		if err != nil {
			return nil, Plain(err)
		}
		out = append(out, Signature{Payload: payload, Sig: sig})
	}
	return out, nil
}

// VerifySignatures checks that one of sigs verifies with the public key
// pub (PEM), names d and, if accept is not nil, has a payload accept
// takes; else it says why the last one did not.
func VerifySignatures(sigs []Signature, pub []byte, d v1.Hash, accept func(Payload) error) error {
	why := "not signed"
	for _, s := range sigs {
		p, err := verifyPayload(pub, s.Payload, s.Sig, d)
		if err == nil && accept != nil {
			err = accept(p)
		}
		if err == nil {
			return nil
		}
		why = err.Error()
	}
	return errors.New(why)
}

// SignedFor checks that app's artifact d carries a signature of the
// public key pub whose claim names the fleet and app of want (any
// cluster and revision: clusters share an artifact, and a rollback goes
// back to an earlier one).
func (r Registry) SignedFor(ctx context.Context, d v1.Hash, pub []byte, want Claim) error {
	sigs, err := r.Signatures(ctx, want.App, d)
	if err != nil {
		return err
	}
	err = VerifySignatures(sigs, pub, d, func(p Payload) error {
		switch c, ok := ClaimOf(p); {
		case !ok:
			return errors.New("its signature names no cluster")
		case c.Fleet != want.Fleet || c.App != want.App:
			return fmt.Errorf("its signature is for fleet %s, app %s", c.Fleet, c.App)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("artifact %s carries no signature of this delivery's key for fleet %s, app %s: %w", Short(d.String()), want.Fleet, want.App, err)
	}
	return nil
}

// Sign signs app's artifact d, already pushed, for the claim c (the
// zero Claim: none), as a layer added to its signature manifest (the
// signatures of other keys there stay). When a signature of this key is
// there already (made for another cluster that gets the same artifact,
// or an earlier release), nothing is signed again.
func (r Registry) Sign(ctx context.Context, app string, d v1.Hash, s *Signer, c Claim) error {
	repo, err := r.Repository(app)
	if err != nil {
		return err
	}
	opts := r.options(ctx)
	old, err := ReadSignatures(repo, d, opts)
	if err != nil {
		return err
	}
	pub, err := s.PublicKey()
	if err != nil {
		return err
	}
	if VerifySignatures(old, pub, d, nil) == nil {
		return nil
	}
	p := payloadOf(repo, d)
	if c != (Claim{}) {
		p.Optional = c.optional()
	}
	payload, sig, err := s.sign(p)
	if err != nil {
		return err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	for _, l := range append(old, Signature{Payload: payload, Sig: sig}) {
		if img, err = mutate.Append(img, signatureLayer(l)); err != nil {
			return err
		}
	}
	// Written under its tag at once: one manifest request, not a push
	// by digest, a read of it back and a tag.
	if err := remote.Write(repo.Tag(SignatureTag(d)), img, opts...); err != nil {
		return fmt.Errorf("signing: pushing to %s: %w", repo, Plain(err))
	}
	return nil
}

// signatureLayer is a signature as a layer of a signature manifest.
func signatureLayer(s Signature) mutate.Addendum {
	return mutate.Addendum{
		Layer:       staticLayer(s.Payload, SignatureMediaType),
		MediaType:   SignatureMediaType,
		Annotations: map[string]string{SignatureAnnotation: s.Sig},
	}
}

// encodeSig is a signature as cosign writes it in an annotation.
func encodeSig(sig []byte) string { return base64.StdEncoding.EncodeToString(sig) }

// Nothing is the artifact of nothing that deletes app from a cluster
// (its Flux prunes what it applied), made for one claim and one run:
// its annotations name the fleet, cluster and app and a random run, so
// its digest is its own, and a delete signed for one cluster, app or
// run is no artifact another can be given.
func Nothing(c Claim) (v1.Image, error) {
	img, err := Pack(nil, Origin{})
	if err != nil {
		return nil, err
	}
	run := make([]byte, 16)
	if _, err := rand.Read(run); err != nil {
		return nil, err
	}
	return mutate.Annotations(img, map[string]string{claimFleet: c.Fleet, claimCluster: c.Cluster, claimApp: c.App, claimRun: hex.EncodeToString(run)}).(v1.Image), nil
}
