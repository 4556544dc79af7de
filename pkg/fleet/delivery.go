package fleet

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
)

// Delivery is how the renders of a group's (or one cluster's) clusters
// reach them when nothing may write to them: each app's render for a
// cluster is published to a registry as a Flux OCI artifact, and the
// cluster's Flux pulls it from its tag. The rollout moves a cluster's
// tag when its wave starts; it reads the cluster, through its context
// if it has one, only to see what Flux applied.
type Delivery struct {
	// OCI is the repository base, oci://registry.example.com/fleets/prod:
	// each app gets its repository under it (…/prod/web), each cluster
	// its tag there (…/prod/web:edge-1).
	OCI string `yaml:"oci" jsonschema:"required"`
	// Insecure lets the registry be reached over plain HTTP.
	Insecure bool `yaml:"insecure"`
	// Namespace is where the cluster's Flux objects are (flux-system).
	Namespace string `yaml:"namespace"`
	// Interval is how often Flux looks for a new artifact (1m).
	Interval time.Duration `yaml:"interval"`
	// Timeout bounds Flux's apply and health checks (5m).
	Timeout time.Duration `yaml:"timeout"`
	// SecretRef names the Secret in Namespace with the registry's
	// credentials, for the cluster's Flux; "" for none.
	SecretRef string `yaml:"secretRef"`
	// Signing signs every artifact published, as cosign signs, so that
	// the cluster's Flux verifies it (bootstrap writes the verify).
	Signing *Signing `yaml:"signing"`
}

// Signing is the key a delivery signs its artifacts with: an ECDSA P-256
// private key (cosign generate-key-pair's, with COSIGN_PASSWORD, or a
// PEM one), from exactly one of a file (relative to the fleet file's
// folder; SOPS-encrypted is fine) and an environment variable.
type Signing struct {
	Key    string `yaml:"key"`
	KeyEnv string `yaml:"keyEnv"`
	// PublicKey is the key's public half (cosign.pub, relative to the
	// fleet file's folder): what a command that only reads the registry's
	// records (status, history, diff) verifies them with, so that it
	// needs no private key. "": derived from the key, which must then be
	// readable.
	PublicKey string `yaml:"publicKey"`
}

// The delivery's defaults: where a cluster's Flux objects are, how often
// Flux looks for a new artifact, and how long its apply and health
// checks may take.
const (
	DefaultDeliveryNamespace = "flux-system"
	DefaultDeliveryInterval  = time.Minute
	DefaultDeliveryTimeout   = 5 * time.Minute
)

// Every is how often the delivery's clusters look for a new artifact.
func (d *Delivery) Every() time.Duration {
	if d.Interval > 0 {
		return d.Interval
	}
	return DefaultDeliveryInterval
}

// DeliveryOf is how c's renders reach it: its own delivery, else its
// group's; nil when the rollout writes to the cluster itself.
func (f *Fleet) DeliveryOf(c *Cluster) *Delivery {
	if c.Delivery != nil {
		return c.Delivery
	}
	if g := f.Group(c.Group); g != nil {
		return g.Delivery
	}
	return nil
}

// Observed reports whether the rollout can read c: it has a context.
// A delivered cluster without one is published to and never read.
func (c *Cluster) Observed() bool { return c.Context != "" }

// validateDelivery checks a group's or cluster's delivery (p the
// field's path).
func (f *Fleet) validateDelivery(e *errs, p string, d *Delivery) {
	if d == nil {
		return
	}
	if err := ParseOCI(d.OCI); err != nil {
		e.add(p+".oci", "%v", err)
	}
	if d.Namespace != "" {
		validateName(e, p+".namespace", d.Namespace)
	}
	if d.SecretRef != "" {
		validateName(e, p+".secretRef", d.SecretRef)
	}
	if d.Interval < 0 {
		e.add(p+".interval", "must not be negative, got %s", d.Interval)
	}
	if d.Timeout < 0 {
		e.add(p+".timeout", "must not be negative, got %s", d.Timeout)
	}
	if s := d.Signing; s != nil {
		switch {
		case s.Key == "" && s.KeyEnv == "":
			e.add(p+".signing", "one of key and keyEnv is required")
		case s.Key != "" && s.KeyEnv != "":
			e.add(p+".signing", "only one of key and keyEnv may be set")
		case s.KeyEnv != "" && !envName.MatchString(s.KeyEnv):
			e.add(p+".signing.keyEnv", "%q is not an environment variable name such as COSIGN_KEY", s.KeyEnv)
		case s.Key != "":
			if _, err := os.Stat(f.ResolvePath(s.Key)); err != nil {
				e.add(p+".signing.key", "%s does not exist (relative paths start at the fleet file's folder)", s.Key)
			}
		}
		if s.PublicKey != "" {
			if _, err := os.Stat(f.ResolvePath(s.PublicKey)); err != nil {
				e.add(p+".signing.publicKey", "%s does not exist (relative paths start at the fleet file's folder)", s.PublicKey)
			}
		}
	}
}

// ParseOCI checks a delivery's oci: an oci:// URL of a repository, with
// no tag or digest (each app and cluster gets its own).
func ParseOCI(url string) error {
	base, ok := strings.CutPrefix(url, "oci://")
	switch {
	case url == "":
		return fmt.Errorf("required: the repository to publish to, such as oci://registry.example.com/fleets/prod")
	case !ok:
		return fmt.Errorf("%q is not an oci:// URL, such as oci://registry.example.com/fleets/prod", url)
	}
	host, rest, _ := strings.Cut(strings.TrimSuffix(base, "/"), "/")
	switch {
	case host == "":
		return fmt.Errorf("%q names no registry: oci://<registry>/<repository>", url)
	case strings.ContainsAny(rest, "@:") || strings.Contains(host, "@"):
		return fmt.Errorf("%q names a tag or digest: give the repository only, each app and cluster gets its own", url)
	}
	if _, err := name.NewRepository(strings.TrimSuffix(base, "/")+"/app", name.StrictValidation); err != nil {
		return fmt.Errorf("%q: %v", url, err)
	}
	return nil
}
