// Package pause is a rollout's brake held in the clusters themselves:
// "kubectl fleet pause" records, in each selected cluster, that one app
// or every app of the fleet is paused, by whom, when and why; every
// runner of the fleet (a CI job, reconcile's shards, a colleague) reads
// it there. apply and reconcile write no paused app to a paused cluster
// and start no later batch or group past it; "kubectl fleet resume"
// lifts it.
package pause

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// Namespace is where pauses are kept: kubectl fleet's namespace, beside
// the apps' sets and revisions.
const Namespace = inventory.Namespace

// All is the key of a pause of every app of the fleet: no app name (a
// DNS label) has an underscore.
const All = "_all"

// FieldManager writes the pauses.
const FieldManager = "kubectl-fleet"

// Name is the ConfigMap that holds fleet's pauses on a cluster: a dot
// keeps it apart from every app's set ("fleet-<app>").
func Name(fleet string) string { return "pause." + fleet }

// Pause is one pause: of App ("" for every app), by whom, when, why.
type Pause struct {
	App    string    `json:"app,omitempty"`
	By     string    `json:"by"`
	At     time.Time `json:"at"`
	Reason string    `json:"reason"`
}

// Text says the pause as the messages do, at now: `paused 10m ago by
// alice: "investigating latency"`.
func (p Pause) Text(now time.Time) string {
	what := "paused"
	if p.App != "" {
		what = p.App + " paused"
	}
	return fmt.Sprintf("%s %s ago by %s: %q", what, duration.HumanDuration(now.Sub(p.At)), p.By, p.Reason)
}

// Line is a pause on a cluster as status and history say it with -o
// json ("type": "pause").
type Line struct {
	Type    string `json:"type"`
	Cluster string `json:"cluster"`
	Pause
}

// Lines are the pauses of clusters, by cluster name, in the order of
// names.
func Lines(names []string, pauses map[string][]Pause) []Line {
	var lines []Line
	for _, c := range names {
		for _, p := range pauses[c] {
			lines = append(lines, Line{Type: "pause", Cluster: c, Pause: p})
		}
	}
	return lines
}

// Text is the line as text, at now: "Paused: prod-eu paused 10m ago by
// alice: …".
func (l Line) Text(now time.Time) string { return "Paused: " + l.Cluster + " " + l.Pause.Text(now) }

// Holds reports whether p pauses app.
func (p Pause) Holds(app string) bool { return p.App == "" || p.App == app }

// Of are the pauses a ConfigMap holds (none for nil), in key order.
func Of(cm *corev1.ConfigMap) []Pause {
	if cm == nil {
		return nil
	}
	keys := make([]string, 0, len(cm.Data))
	for k := range cm.Data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []Pause
	for _, k := range keys {
		var p Pause
		if err := json.Unmarshal([]byte(cm.Data[k]), &p); err != nil {
			p = Pause{By: "?", Reason: "unreadable pause: " + err.Error()} // still a pause: fail closed
		}
		p.App = strings.TrimPrefix(k, All)
		out = append(out, p)
	}
	return out
}

// Find is the first of pauses that holds one of apps, or nil.
func Find(pauses []Pause, apps ...string) *Pause {
	for i := range pauses {
		for _, app := range apps {
			if pauses[i].Holds(app) {
				return &pauses[i]
			}
		}
	}
	return nil
}

// Read reads fleet's pauses on the cluster of client: none when it has
// no ConfigMap of them (or no namespace kubectl-fleet).
func Read(ctx context.Context, client *kube.Client, fleet string) ([]Pause, error) {
	return ReadFrom(ctx, InCluster(client, fleet))
}

// Set records p for each of apps (none: every app) on the cluster of
// client, beside the pauses there already.
func Set(ctx context.Context, client *kube.Client, fleet string, apps []string, p Pause) error {
	return SetIn(ctx, InCluster(client, fleet), apps, p)
}

// Lift removes the pauses of apps (none: every pause of the fleet) from
// the cluster of client, and returns those it removed.
func Lift(ctx context.Context, client *kube.Client, fleet string, apps []string) ([]Pause, error) {
	return LiftIn(ctx, InCluster(client, fleet), apps)
}

// SetIn records p for each of apps (none: every app) in s, beside the
// pauses there already.
func SetIn(ctx context.Context, s Store, apps []string, p Pause) error {
	data := map[string]string{}
	keys := apps
	if len(keys) == 0 {
		keys = []string{All}
	}
	for _, k := range keys {
		q := p
		q.App = ""
		b, err := json.Marshal(q)
		if err != nil {
			return err
		}
		data[k] = string(b)
	}
	return s.Merge(ctx, data)
}

// LiftIn removes the pauses of apps (none: every pause) from s, and
// returns those it removed: only those it read, with the values it read
// (a pause made since stays).
func LiftIn(ctx context.Context, s Store, apps []string) ([]Pause, error) {
	data, err := s.Data(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the pauses: %w", err)
	}
	var lifted []Pause
	seen := map[string]string{}
	for _, p := range Of(&corev1.ConfigMap{Data: data}) {
		if len(apps) == 0 || slices.Contains(apps, p.App) {
			lifted = append(lifted, p)
			seen[keyOf(p)] = data[keyOf(p)]
		}
	}
	if len(lifted) == 0 {
		return nil, nil
	}
	return lifted, s.Lift(ctx, seen)
}

// InCluster is the Store of fleet's pauses on the cluster of client: the
// ConfigMap Name.
func InCluster(client *kube.Client, fleet string) Store { return configMap{client, fleet} }

// configMap keeps fleet's pauses on a cluster in the ConfigMap Name.
type configMap struct {
	client *kube.Client
	fleet  string
}

func (c configMap) Data(ctx context.Context) (map[string]string, error) {
	cm, err := kube.ConfigMap(ctx, c.client, Namespace, Name(c.fleet))
	if err != nil || cm == nil {
		return nil, err
	}
	return cm.Data, nil
}

func (c configMap) Merge(ctx context.Context, data map[string]string) error {
	if err := c.client.EnsureNamespace(ctx, Namespace, FieldManager); err != nil {
		return err
	}
	return kube.MergeConfigMap(ctx, c.client, Namespace, Name(c.fleet), data, FieldManager)
}

// Lift removes keys, and the ConfigMap once it holds none: both only if
// it did not change since it was read.
func (c configMap) Lift(ctx context.Context, seen map[string]string) error {
	cm, err := kube.ConfigMap(ctx, c.client, Namespace, Name(c.fleet))
	if err != nil || cm == nil {
		return err
	}
	for k, v := range seen {
		if cm.Data[k] == v { // a pause made since was not seen: it stays
			delete(cm.Data, k)
		}
	}
	if len(cm.Data) == 0 {
		return c.client.Core.ConfigMaps(Namespace).Delete(ctx, cm.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &cm.ResourceVersion}})
	}
	_, err = c.client.Core.ConfigMaps(Namespace).Update(ctx, cm, metav1.UpdateOptions{FieldManager: FieldManager})
	return err
}

// keyOf is the ConfigMap key of p.
func keyOf(p Pause) string {
	if p.App == "" {
		return All
	}
	return p.App
}

// Change is a pause (or a resume, when Lift) of Apps (none: every app)
// on clusters of a fleet.
type Change struct {
	Fleet    *fleet.Fleet
	Clusters []*fleet.Cluster
	Apps     []string
	Lift     bool
	// Reason is the pause's reason; Now its time.
	Reason   string
	Now      time.Time
	Parallel int
}

// Apply makes the change on every cluster (Parallel at once): a pause
// records who the cluster says the user is; a resume lifts the pauses
// of the apps. A delivered cluster's pauses are kept in its registry. It
// returns each cluster's outcome and what it did there, a line by
// cluster name.
func (ch Change) Apply(ctx context.Context, conn kube.Connector, delivered Delivered) ([]runner.Outcome, map[string]string) {
	var mu sync.Mutex
	said := map[string]string{}
	name := ch.Fleet.Metadata.Name
	say := func(c *fleet.Cluster, line string, err error) error {
		mu.Lock()
		said[c.Name] = line
		mu.Unlock()
		return err
	}
	outcomes := kube.EachTarget(ctx, conn, ch.Fleet, ch.Clusters, ch.Parallel, kube.Reach{Written: func(ctx context.Context, c *fleet.Cluster, client *kube.Client) error {
		line, err := ch.one(ctx, InCluster(client, name), func() string { return revision.User(ctx, client) })
		return say(c, line, err)
	}, Delivered: func(ctx context.Context, c *fleet.Cluster) error {
		s, err := delivered.PauseStore(c)
		if err != nil {
			return err
		}
		line, err := ch.one(ctx, s, func() string { return revision.PublisherOf(ctx, conn, ch.Fleet, c) })
		return say(c, line, err)
	}})
	return outcomes, said
}

// one makes the change in s, a cluster's pauses, and says what it did;
// by says who pauses.
func (ch Change) one(ctx context.Context, s Store, by func() string) (string, error) {
	what := "every app"
	if len(ch.Apps) > 0 {
		what = "app " + strings.Join(ch.Apps, ", ")
	}
	if !ch.Lift {
		p := Pause{By: by(), At: ch.Now.UTC().Truncate(time.Second), Reason: ch.Reason}
		if err := SetIn(ctx, s, ch.Apps, p); err != nil {
			return "", err
		}
		return fmt.Sprintf("paused %s (by %s: %q)", what, p.By, p.Reason), nil
	}
	lifted, err := LiftIn(ctx, s, ch.Apps)
	if err != nil {
		return "", err
	}
	if len(lifted) == 0 {
		left, err := ReadFrom(ctx, s)
		if p := Find(left, ch.Apps...); err == nil && p != nil {
			return "", fmt.Errorf("still %s: it pauses every app; resume without --app lifts it", p.Text(ch.Now))
		}
		return "not paused", err
	}
	lines := make([]string, len(lifted))
	for i, p := range lifted {
		lines[i] = p.Text(ch.Now)
	}
	return "resumed: was " + strings.Join(lines, "; "), nil
}
