package fleet

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
)

// APIVersion is the only fleet file apiVersion this release reads.
const APIVersion = "fleet/v1alpha1"

// Kind is the kind of a fleet file.
const Kind = "Fleet"

// Fleet is a parsed fleet file: named clusters in ordered groups, each with
// attributes, and optional named sources (apps).
type Fleet struct {
	// APIVersion is fleet/v1alpha1.
	APIVersion string `yaml:"apiVersion" jsonschema:"required,enum=fleet/v1alpha1"`
	// Kind is Fleet.
	Kind string `yaml:"kind" jsonschema:"required,enum=Fleet"`
	// Metadata names the fleet.
	Metadata Metadata `yaml:"metadata" jsonschema:"required"`
	// Defaults are what every cluster inherits.
	Defaults Defaults `yaml:"defaults"`
	// Groups are the rollout's steps, in order: each group starts once
	// the one before it (or those its after: names) verified the
	// release; a group's batches are steps inside it.
	Groups []Group `yaml:"groups" jsonschema:"required"`
	// Clusters are the fleet's members, each in a group.
	Clusters []Cluster `yaml:"clusters" jsonschema:"required"`
	// Apps are named sources deployed to some or all clusters.
	Apps []App `yaml:"apps"`
	// IgnoreDifferences applies to every app, ad hoc sources included.
	IgnoreDifferences []object.IgnoreRule `yaml:"ignoreDifferences"`
	// Approvers are those whose signed approvals let a release into a
	// group marked approval: required (kubectl fleet approve --key).
	Approvers []Approver `yaml:"approvers"`
	// OnFailure is what a rollout does when a group's failures pass its
	// maxFailures: "hold" (the default) stops it there; "rollback" also
	// rolls back every cluster the run changed, in that group and the
	// groups before it. A group's own onFailure wins.
	OnFailure string `yaml:"onFailure" jsonschema:"enum=hold,enum=rollback"`
	// Notify are the sinks told of every release's events: webhooks
	// with CloudEvents (docs/events.md).
	Notify []Notify `yaml:"notify"`

	// Path is the absolute path of the file the fleet was read from.
	Path string `yaml:"-"`
	// Dir is the folder relative paths inside the file resolve from.
	Dir string `yaml:"-"`
	// positions maps a field path ("clusters[0].context") to its line.
	positions map[string]int
	// names maps a cluster's, group's or app's path ("apps[0]") to its
	// name, for errors.
	names map[string]string
}

// Metadata names the fleet.
type Metadata struct {
	// Name is the fleet's name, a DNS label: the apps it applies are
	// recorded as this fleet's on each cluster.
	Name string `yaml:"name" jsonschema:"required"`
}

// Defaults holds what every cluster inherits.
type Defaults struct {
	// Attributes are every cluster's, under its group's and its own.
	Attributes map[string]any `yaml:"attributes"`
	// AttributesFrom are read from every cluster before rendering.
	AttributesFrom []AttributeFrom `yaml:"attributesFrom"`
	// Kubeconfig and KubeconfigFrom (at most one of them) are the
	// kubeconfig of every cluster that sets neither.
	Kubeconfig     string          `yaml:"kubeconfig"`
	KubeconfigFrom *KubeconfigFrom `yaml:"kubeconfigFrom"`
}

// Group is an ordered rollout wave of clusters.
type Group struct {
	// Name is the group's name, a DNS label.
	Name string `yaml:"name" jsonschema:"required"`
	// Attributes are the group's clusters', over the defaults.
	Attributes map[string]any `yaml:"attributes"`
	// AttributesFrom are read from each of the group's clusters.
	AttributesFrom []AttributeFrom `yaml:"attributesFrom"`
	// MaxParallel is how many clusters of the group are worked on at once,
	// or a percentage of its clusters ("10%", rounded up); 0 means no
	// limit beyond the command's --parallel.
	MaxParallel Amount `yaml:"maxParallel"`
	// MaxFailures is how many failed clusters the group tolerates before the
	// rollout stops, or a percentage of its clusters ("5%", rounded down).
	MaxFailures Amount `yaml:"maxFailures"`
	// Batches split the group into ordered steps, each a wave of its own
	// that the promotion rule holds until the batches before it verified
	// the release: by label selector or by size (1, 10%, 100%).
	Batches []Batch `yaml:"batches"`
	// BatchSoak is how long the rollout watches each batch but the last
	// before the next starts; default Soak.
	BatchSoak time.Duration `yaml:"batchSoak"`
	// Approval "required" holds a rollout before the group until each of
	// its clusters has an approval of exactly the release it is to get
	// (kubectl fleet approve); "" or "none": no approval. The long form,
	// {required: true, expires: 72h}, says how long an approval counts.
	Approval Approval `yaml:"approval"`
	// Windows are the group's deploy windows: apply and reconcile start
	// writes to it only while they let them (--ignore-windows aside).
	Windows []Window `yaml:"windows"`
	// After names the groups this group waits for: they must have
	// verified the release before it gets it. Default: the group before
	// it in the file; [] for none (a track of its own).
	After *[]string `yaml:"after"`
	// Protected groups need a confirmation (or --yes) before any write.
	Protected bool `yaml:"protected"`
	// Soak is how long the rollout watches the group's health after it
	// succeeded, before the next group starts.
	Soak time.Duration `yaml:"soak"`
	// Verify are checks run for each cluster of the group once its apps
	// (and their tests) succeeded.
	Verify []Check `yaml:"verify"`
	// Analysis are metrics measured on each cluster of the group while
	// it soaks (each of its batches, and the group's soak): a failed one
	// fails the cluster.
	Analysis []Analysis `yaml:"analysis"`
	// Delivery, when set, publishes the group's renders to a registry
	// its clusters' Flux pulls from, instead of writing to them.
	Delivery *Delivery `yaml:"delivery"`
	// OnFailure is the fleet's onFailure for this group: "hold" or
	// "rollback"; "" takes the fleet's.
	OnFailure string `yaml:"onFailure" jsonschema:"enum=hold,enum=rollback"`
	// Notify are sinks told of the events of this group's waves, and
	// of the release's, besides the fleet's.
	Notify []Notify `yaml:"notify"`
}

// The values of onFailure.
const (
	OnFailureHold     = "hold"
	OnFailureRollback = "rollback"
)

// CheckRollback says, at the onFailure: rollback that asks it, that a run
// keeping historyLimit revisions per app (1: the current one alone) has
// nothing to roll back to; nil when it has, or nothing rolls back.
func (f *Fleet) CheckRollback(historyLimit int) error {
	if historyLimit != 1 {
		return nil
	}
	for i, g := range f.Groups {
		if !f.RollsBack(&g) {
			continue
		}
		field := "onFailure" // the fleet's, unless the group says its own
		if g.OnFailure != "" {
			field = fmt.Sprintf("groups[%d].onFailure", i)
		}
		return f.FieldError(field, "rollback needs an earlier revision to go back to, and --history-limit 1 keeps the current one alone: give --history-limit 0 (all) or 2 and more")
	}
	return nil
}

// RollsBackAnywhere reports whether any group's failure rolls a run
// back (RollsBack).
func (f *Fleet) RollsBackAnywhere() bool {
	for i := range f.Groups {
		if f.RollsBack(&f.Groups[i]) {
			return true
		}
	}
	return false
}

// RollsBack reports whether a failure of group g past its maxFailures
// rolls the run back (its onFailure, else the fleet's).
func (f *Fleet) RollsBack(g *Group) bool {
	if g != nil && g.OnFailure != "" {
		return g.OnFailure == OnFailureRollback
	}
	return f.OnFailure == OnFailureRollback
}

// Approval is what a group asks before its clusters get a release.
// In YAML: "required", "none", or the mapping.
type Approval struct {
	// Required holds a rollout before the group until each of its
	// clusters has an approval of exactly the release it is to get.
	Required bool `yaml:"required"`
	// Expires is how long after it was given an approval counts; 0: as
	// long as the render is the one approved.
	Expires time.Duration `yaml:"expires"`
}

// Check is a command run on this machine against one cluster.
type Check struct {
	// Name names the check in output.
	Name string `yaml:"name" jsonschema:"required"`
	// Command is the program and its arguments; a relative program path
	// resolves from the fleet file's folder.
	Command []string `yaml:"command" jsonschema:"required"`
	// Timeout bounds one run; 0 means DefaultCheckTimeout.
	Timeout time.Duration `yaml:"timeout"`
}

// DefaultCheckTimeout bounds a check without a timeout.
const DefaultCheckTimeout = 5 * time.Minute

// Cluster is one member of the fleet, reached through a kubeconfig context.
type Cluster struct {
	// Name is the cluster's name, a DNS label, used in output and in
	// --cluster.
	Name string `yaml:"name" jsonschema:"required"`
	// Group is the name of the group the cluster is in.
	Group string `yaml:"group" jsonschema:"required"`
	// Context is the kubeconfig context that reaches the cluster;
	// optional for a delivered cluster, which it then only reads.
	Context string `yaml:"context"`
	// Kubeconfig is the kubeconfig file of the context (relative to the
	// fleet file's folder); kubectl's own when empty.
	Kubeconfig string `yaml:"kubeconfig"`
	// KubeconfigFrom reads the kubeconfig from a secret instead of a file;
	// at most one of Kubeconfig and KubeconfigFrom is set.
	KubeconfigFrom *KubeconfigFrom `yaml:"kubeconfigFrom"`
	// Labels select clusters (--selector, an app's selector).
	Labels map[string]string `yaml:"labels"`
	// Attributes are the values the cluster's render gets, over its
	// group's and the defaults.
	Attributes map[string]any `yaml:"attributes"`
	// AttributesFrom are read from the cluster before rendering.
	AttributesFrom []AttributeFrom `yaml:"attributesFrom"`
	// Server pins the API server URL the context must point at.
	Server string `yaml:"server"`
	// UID pins the cluster identity: the UID of the kube-system namespace.
	UID string `yaml:"uid"`
	// SameClusterAs names the cluster this entry reaches the same API
	// server as, on purpose; two entries of one server (the same server
	// or uid pin, or contexts pointing at the same URL) are otherwise an
	// error: they would share every app's records there.
	SameClusterAs string `yaml:"sameClusterAs"`
	// Delivery, when set, is the cluster's over its group's.
	Delivery *Delivery `yaml:"delivery"`

	// Index is the cluster's position in the fleet file.
	Index int `yaml:"-"`
	// ResolvedKubeconfig is the temporary file the cluster's kubeconfigFrom
	// was written to for this run (see kube.KubeconfigSources), or "".
	ResolvedKubeconfig string `yaml:"-"`
}

// KubeconfigFrom is where CI keeps a kubeconfig: exactly one of an
// environment variable holding it (or its base64) and a command printing
// it.
type KubeconfigFrom struct {
	// Env names an environment variable holding the kubeconfig's content
	// or its base64.
	Env string `yaml:"env"`
	// Command is a program and its arguments whose standard output is the
	// kubeconfig; it runs from the fleet file's folder, where a relative
	// program path resolves too.
	Command []string `yaml:"command"`
}

// String names the source, never its content: "env:NAME" or
// "command:program args…".
func (k *KubeconfigFrom) String() string {
	if k.Env != "" {
		return "env:" + k.Env
	}
	return "command:" + strings.Join(k.Command, " ")
}

// KubeconfigOf returns where a cluster's kubeconfig comes from: the
// cluster's own kubeconfig or kubeconfigFrom, else the defaults'. Both
// empty means --kubeconfig, else kubectl's loading rules. The path is as
// written in the file (see ResolvePath).
func (f *Fleet) KubeconfigOf(c *Cluster) (path string, from *KubeconfigFrom) {
	if c.Kubeconfig != "" || c.KubeconfigFrom != nil {
		return c.Kubeconfig, c.KubeconfigFrom
	}
	return f.Defaults.Kubeconfig, f.Defaults.KubeconfigFrom
}

// AttributeFrom reads attributes from a live object in the cluster before
// rendering, the way Timoni's runtime values do. Each entry of Attributes
// maps an attribute name to a kubectl JSONPath expression evaluated on the
// object, e.g. {clusterUID: "{.metadata.uid}"}.
type AttributeFrom struct {
	// APIVersion, Kind, Namespace and Name name the object read.
	APIVersion string `yaml:"apiVersion" jsonschema:"required"`
	Kind       string `yaml:"kind" jsonschema:"required"`
	Namespace  string `yaml:"namespace"`
	Name       string `yaml:"name" jsonschema:"required"`
	// Attributes map each attribute's name to a JSONPath on the object,
	// such as {.metadata.uid}.
	Attributes map[string]string `yaml:"attributes" jsonschema:"required"`
	// Optional leaves the attributes unset (so a ${var:=default} applies)
	// when the object or field does not exist.
	Optional bool `yaml:"optional"`
}

// App is a named source of manifests deployed to some or all clusters.
type App struct {
	// Name is the app's name, a DNS label: its set on each cluster.
	Name string `yaml:"name" jsonschema:"required"`
	// Kustomize is a kustomization's folder (relative to the fleet
	// file's folder); one of kustomize, jsonnet, manifests and helm.
	// Each of the three may be an OCI artifact instead:
	// oci://registry/repository:tag or @sha256:….
	Kustomize string `yaml:"kustomize"`
	// Jsonnet is a .jsonnet file, given the cluster's attributes.
	Jsonnet string `yaml:"jsonnet"`
	// Manifests is a YAML file or a folder of them.
	Manifests string `yaml:"manifests"`
	// Path is, for an oci:// source, the folder (kustomize, manifests) or
	// file (jsonnet) inside the artifact; default its root.
	Path string `yaml:"path"`
	// Insecure reaches an oci:// source's registry over plain HTTP.
	Insecure bool `yaml:"insecure"`
	// Verify checks an oci:// source's signature before it is rendered.
	Verify *Verify `yaml:"verify"`
	// Helm is a Helm chart and its values.
	Helm *Helm `yaml:"helm"`
	// JPath lists extra jsonnet library folders.
	JPath []string `yaml:"jpath"`
	// Namespace is the default namespace for the app's namespaced objects.
	Namespace string `yaml:"namespace"`
	// CreateNamespace creates Namespace, as helm install
	// --create-namespace does, when no app's render on the cluster has
	// it: default true for a Helm app, false for the others
	// (CreatesNamespace).
	CreateNamespace *bool `yaml:"createNamespace"`
	// Groups, Clusters (names or globs) and Selector (a label selector)
	// narrow the clusters the app goes to; all of them when none is set.
	Groups   []string `yaml:"groups"`
	Clusters []string `yaml:"clusters"`
	Selector string   `yaml:"selector"`
	// IgnoreDifferences adds to the fleet's rules for this app.
	IgnoreDifferences []object.IgnoreRule `yaml:"ignoreDifferences"`
	// Tests is a source (a folder of manifests or a kustomization) of Jobs
	// run on each cluster once the app is applied and healthy.
	Tests string `yaml:"tests"`
	// DependsOn names apps applied and healthy first, on each cluster.
	DependsOn []string `yaml:"dependsOn"`
	// Substitute false leaves the ${...} of a kustomize or manifests app's
	// objects alone (vendored manifests full of other tools' variables);
	// default true.
	Substitute *bool `yaml:"substitute"`
}

// Verify is how an oci:// source's signature is checked, as Flux's
// OCIRepository verify: provider cosign with a public key.
type Verify struct {
	// Provider is cosign (the default).
	Provider string `yaml:"provider"`
	// Key is the PEM public key's file (cosign.pub), relative to the
	// fleet file's folder.
	Key string `yaml:"key" jsonschema:"required"`
}

// OCI is the app's oci:// reference, "" when its source is a path.
func (a *App) OCI() string {
	for _, s := range []string{a.Kustomize, a.Jsonnet, a.Manifests} {
		if strings.HasPrefix(s, OCIScheme) {
			return s
		}
	}
	return ""
}

// OCIScheme starts a source that is an OCI artifact.
const OCIScheme = "oci://"

// CreatesNamespace reports whether the app's namespace is created for it
// (createNamespace; by default for a Helm app).
func (a *App) CreatesNamespace() bool {
	if a.Namespace == "" {
		return false
	}
	if a.CreateNamespace != nil {
		return *a.CreateNamespace
	}
	return a.Helm != nil
}

// Helm is an app's Helm chart: where it comes from and its values.
type Helm struct {
	// Chart is a local folder or .tgz (relative to the fleet file's
	// folder), an oci:// reference, or a chart's name in Repo.
	Chart string `yaml:"chart" jsonschema:"required"`
	// Repo is an HTTP chart repository's URL.
	Repo string `yaml:"repo"`
	// Version is the chart's version (or a semver range); required for a
	// chart from a repository or registry.
	Version string `yaml:"version"`
	// ReleaseName is .Release.Name; the app's name when empty.
	ReleaseName string `yaml:"releaseName"`
	// Values are values files (relative to the fleet file's folder),
	// merged in order as helm's -f; paths and contents get the cluster's
	// ${var} substitution.
	Values []string `yaml:"values"`
	// ValuesInline are values merged after the files, with substitution.
	ValuesInline map[string]any `yaml:"valuesInline"`
	// IncludeCRDs renders the chart's crds/ folder too (default true).
	IncludeCRDs *bool `yaml:"includeCRDs"`
	// PlainHTTP reaches an OCI registry over HTTP (helm's --plain-http).
	PlainHTTP bool `yaml:"plainHTTP"`
}

// IgnoreRules returns the ignore rules of an app: the fleet's, then the
// app's own. An app the fleet file does not name (an ad hoc source) gets
// the fleet's.
func (f *Fleet) IgnoreRules(app string) []object.IgnoreRule {
	rules := slices.Clone(f.IgnoreDifferences)
	for _, a := range f.Apps {
		if a.Name == app {
			rules = append(rules, a.IgnoreDifferences...)
		}
	}
	return rules
}
