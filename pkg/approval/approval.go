// Package approval binds a human's approval to one release: "kubectl
// fleet approve" records, in each selected cluster, who approved which
// render of each app (its digest, under the cluster's digest key); a
// rollout to a group marked "approval: required" starts only when every
// one of its clusters has an approval of exactly what it is about to
// get. A different render needs a new approval: nothing carries over to
// what nobody reviewed.
//
// An approval is signed with an approver's Ed25519 key, whose public half
// the fleet file lists (fleet.Approver), over the fleet, the cluster, the
// app, the digest, who the cluster says approved and when: the job that
// applies may write anything in the cluster, but holds no approver's
// key, so it cannot approve its own release. An approval whose signature
// no approver's key verifies, or given by the identity that applies, is
// not counted.
package approval

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/digest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// Namespace is where approvals are kept, beside the apps' sets.
const Namespace = inventory.Namespace

// FieldManager writes the approvals.
const FieldManager = "kubectl-fleet"

// KeyEnv names the approver's private key when approve's --key does not.
const KeyEnv = "KUBECTL_FLEET_APPROVER_KEY"

// Name is the ConfigMap that holds fleet's approvals on a cluster.
func Name(fleet string) string { return "approval." + fleet }

// Approval is who approved which render of an app, and when, signed.
type Approval struct {
	App    string `json:"app"`
	Digest string `json:"digest"`
	// By is who approved, as the cluster authenticated them
	// (SelfSubjectReview) when the approval was written.
	By string    `json:"by"`
	At time.Time `json:"at"`
	// Approver names the fleet's approver whose key signed it.
	Approver string `json:"approver,omitempty"`
	// Signature is the approver's Ed25519 signature of Payload, base64.
	Signature string `json:"signature,omitempty"`
}

// Payload is what an approval's signature signs: the fleet, the cluster
// entry, the app, the digest, who approved and when. Moved to another
// fleet, cluster, app or render, it no longer verifies.
func (a Approval) Payload(fleet, cluster string) []byte {
	return fmt.Appendf(nil, "kubectl-fleet approval v1\nfleet: %s\ncluster: %s\napp: %s\ndigest: %s\nby: %s\nat: %s\n",
		fleet, cluster, a.App, a.Digest, a.By, a.At.UTC().Format(time.RFC3339))
}

// Signer is an approver's private key, and the approver's name in the
// fleet file.
type Signer struct {
	Name string
	Key  ed25519.PrivateKey
}

// LoadSigner reads an Ed25519 private key (PKCS #8 PEM, as openssl
// genpkey -algorithm ed25519 writes it) and finds its approver among
// approvers: a key that is no approver's signs nothing.
func LoadSigner(path string, approvers []fleet.Approver) (Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Signer{}, fmt.Errorf("the approver key: %w", err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return Signer{}, fmt.Errorf("the approver key %s is not PEM (openssl genpkey -algorithm ed25519 -out %s makes one)", path, path)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return Signer{}, fmt.Errorf("the approver key %s: %v", path, err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return Signer{}, fmt.Errorf("the approver key %s is a %T, not Ed25519", path, k)
	}
	pub := priv.Public().(ed25519.PublicKey)
	var names []string
	for _, a := range approvers {
		if k, err := a.Key(); err == nil && k.Equal(pub) {
			return Signer{Name: a.Name, Key: priv}, nil
		}
		names = append(names, a.Name)
	}
	return Signer{}, fmt.Errorf("the key %s is not one of the fleet's approvers (%s): list its public key (openssl pkey -in %s -pubout) under approvers:", path, strings.Join(names, ", "), path)
}

// Rules are what makes an approval count on one cluster.
type Rules struct {
	Fleet, Cluster string
	Approvers      []fleet.Approver
	// Self is who the run that checks is, as the cluster authenticates
	// it (on a delivered cluster, as revision.Publisher says): an
	// approval by Self does not count (no one approves their own
	// release).
	Self string
	// Expires is how long an approval counts after it was given (the
	// group's approval.expires); 0: as long as its render is the one
	// approved.
	Expires time.Duration
}

// skew is how far in the future an approval may be dated, for clocks
// that differ, when approvals expire: one dated later never would.
const skew = 5 * time.Minute

// verified is the approver whose key verifies a, or "".
func (r Rules) verified(a Approval) string {
	sig, err := base64.StdEncoding.DecodeString(a.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return ""
	}
	payload := a.Payload(r.Fleet, r.Cluster)
	for _, ap := range r.Approvers {
		if k, err := ap.Key(); err == nil && ed25519.Verify(k, payload, sig) {
			return ap.Name
		}
	}
	return ""
}

// Read reads fleet's approvals on the cluster of client, by app.
func Read(ctx context.Context, client *kube.Client, fleet string) (map[string]Approval, error) {
	cm, err := kube.ConfigMap(ctx, client, Namespace, Name(fleet))
	if err != nil || cm == nil {
		return nil, err
	}
	out := map[string]Approval{}
	for app, v := range cm.Data {
		var a Approval
		if json.Unmarshal([]byte(v), &a) == nil {
			a.App = app
			out[app] = a
		}
	}
	return out, nil
}

// Check says, for each of results (one cluster's renders, an app each)
// that its approvals do not approve under rules, why: "web sha256:1a2b…
// is not approved (approved: sha256:9f8e… by alice 2h ago)"; none when
// all are.
func Check(results []render.Result, approvals map[string]Approval, key digest.Key, now time.Time, rules Rules) []string {
	var out []string
	for _, res := range results {
		d := digest.Render(res.Objects, key)
		a, ok := approvals[res.App]
		switch {
		case ok && a.Digest == d && rules.verified(a) == "":
			out = append(out, fmt.Sprintf("%s %s: its approval is signed by none of the fleet's approvers (written by hand, or with a key not under approvers:): not counted", res.App, revision.ShortDigest(d)))
		case ok && a.Digest == d && rules.Self != "" && a.By == rules.Self:
			out = append(out, fmt.Sprintf("%s %s was approved by %s, who applies it: an approval needs someone else", res.App, revision.ShortDigest(d), a.By))
		case ok && a.Digest == d && rules.Expires > 0 && now.Sub(a.At) > rules.Expires:
			out = append(out, fmt.Sprintf("%s %s was approved by %s %s ago, and its group's approvals expire after %s: approve it again", res.App, revision.ShortDigest(d), a.By, duration.HumanDuration(now.Sub(a.At)), rules.Expires))
		case ok && a.Digest == d && rules.Expires > 0 && a.At.Sub(now) > skew:
			out = append(out, fmt.Sprintf("%s %s: its approval is dated %s from now, and its group's approvals expire: not counted", res.App, revision.ShortDigest(d), duration.HumanDuration(a.At.Sub(now))))
		case ok && a.Digest == d && digest.Comparable(d):
		case !digest.Comparable(d):
			// A render holding Secret values is named by a keyed digest,
			// and the cluster has no digest key yet.
			out = append(out, fmt.Sprintf("%s is not approved (its render holds Secret values, and the cluster has no digest key to name it by yet: kubectl fleet approve makes one)", res.App))
		case ok:
			out = append(out, fmt.Sprintf("%s %s is not approved (approved: %s by %s %s ago)", res.App, revision.ShortDigest(d), revision.ShortDigest(a.Digest), a.By, duration.HumanDuration(now.Sub(a.At))))
		default:
			out = append(out, fmt.Sprintf("%s %s is not approved", res.App, revision.ShortDigest(d)))
		}
	}
	return out
}

// Approve records, on the cluster of client, the approval by the user
// the cluster authenticates of each of results (one cluster's renders,
// an app each), beside its other apps' approvals, and returns them. The
// cluster's digest key is made when it has none, as a first apply would.
func Approve(ctx context.Context, client *kube.Client, fleet, cluster string, results []render.Result, now time.Time, s Signer) ([]Approval, error) {
	if err := client.EnsureNamespace(ctx, Namespace, FieldManager); err != nil {
		return nil, err
	}
	key, err := digest.Ensure(ctx, client, FieldManager)
	if err != nil {
		return nil, err
	}
	by := revision.User(ctx, client)
	data := map[string]string{}
	var out []Approval
	for _, res := range results {
		a := Approval{App: res.App, Digest: digest.Render(res.Objects, key), By: by, At: now.UTC().Truncate(time.Second), Approver: s.Name}
		a.Signature = base64.StdEncoding.EncodeToString(ed25519.Sign(s.Key, a.Payload(fleet, cluster)))
		b, err := json.Marshal(a)
		if err != nil {
			return nil, err
		}
		data[res.App], out = string(b), append(out, a)
	}
	slices.SortFunc(out, func(a, b Approval) int { return strings.Compare(a.App, b.App) })
	return out, kube.MergeConfigMap(ctx, client, Namespace, Name(fleet), data, FieldManager)
}

// Delivered is what a cluster delivered through a registry answers
// approve (package target/registry): the approvals recorded beside its
// tags, given by by.
type Delivered interface {
	Approve(ctx context.Context, c *fleet.Cluster, results []render.Result, now time.Time, s Signer, by string) ([]Approval, error)
}

// Fleet approves, on every cluster of r (Parallel at once; a delivered
// one through delivered), what r renders for it. It returns each cluster's outcome and its approvals.
func Fleet(ctx context.Context, conn kube.Connector, delivered Delivered, r *rendered.Set, parallel int, now time.Time, s Signer) ([]runner.Outcome, map[string][]Approval) {
	var mu sync.Mutex
	out := map[string][]Approval{}
	say := func(c *fleet.Cluster, approved []Approval, err error) error {
		mu.Lock()
		out[c.Name] = approved
		mu.Unlock()
		return err
	}
	outcomes := kube.EachTarget(ctx, conn, r.Fleet, r.Clusters, parallel, kube.Reach{Written: func(ctx context.Context, c *fleet.Cluster, client *kube.Client) error {
		approved, err := Approve(ctx, client, r.Fleet.Metadata.Name, c.Name, r.Of(c.Name), now, s)
		return say(c, approved, err)
	}, Delivered: func(ctx context.Context, c *fleet.Cluster) error {
		approved, err := delivered.Approve(ctx, c, r.Of(c.Name), now, s, revision.UserOf(ctx, conn, r.Fleet, c))
		return say(c, approved, err)
	}})
	return outcomes, out
}

// GenerateKey makes an approver's key: the Signer, its private key as
// PKCS #8 PEM (what --key reads, as openssl genpkey writes it) and its
// public key as the one line approvers: takes.
func GenerateKey(name string) (s Signer, privatePEM []byte, publicKey string, err error) {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		return Signer{}, nil, "", err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return Signer{}, nil, "", err
	}
	spki, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return Signer{}, nil, "", err
	}
	return Signer{Name: name, Key: priv}, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), base64.StdEncoding.EncodeToString(spki), nil
}
