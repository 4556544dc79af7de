package summary

import (
	"maps"
	"sync"
)

// Tally counts, per cluster, its objects' actions, the gates it passed or
// failed (tests, checks, soak) and the revision each app's apply left
// current. It is safe for concurrent use; the zero Tally counts nothing
// yet.
type Tally struct {
	mu      sync.Mutex
	actions map[string]map[string]int
	gates   map[string][]string
	// revisions are the current revision of each app, per cluster.
	revisions map[string]map[string]int
	// published are the artifacts each app's tag points at, per
	// delivered cluster.
	published map[string]map[string]string
	// sources are the OCI artifacts each app was rendered from, per
	// cluster.
	sources map[string]map[string]string
}

// SetPublished records the artifact (its digest) a delivered cluster's
// tag of app points at after the run.
func (t *Tally) SetPublished(cluster, app, digest string) { t.set(&t.published, cluster, app, digest) }

// Published are the artifacts a delivered cluster's tags point at, by
// app.
func (t *Tally) Published(cluster string) map[string]string { return t.get(t.published, cluster) }

// SetSource records the OCI artifact (oci://…@sha256:…) app was rendered
// from for cluster.
func (t *Tally) SetSource(cluster, app, artifact string) { t.set(&t.sources, cluster, app, artifact) }

// Sources are the OCI artifacts a cluster's apps were rendered from, by
// app.
func (t *Tally) Sources(cluster string) map[string]string { return t.get(t.sources, cluster) }

func (t *Tally) set(m *map[string]map[string]string, cluster, app, v string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if *m == nil {
		*m = map[string]map[string]string{}
	}
	if (*m)[cluster] == nil {
		(*m)[cluster] = map[string]string{}
	}
	(*m)[cluster][app] = v
}

func (t *Tally) get(m map[string]map[string]string, cluster string) map[string]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(m[cluster])
}

// Add counts an object's action on a cluster: the word its event says
// (a change.Action, or apply's health result).
func (t *Tally) Add(cluster string, a string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.actions == nil {
		t.actions = map[string]map[string]int{}
	}
	if t.actions[cluster] == nil {
		t.actions[cluster] = map[string]int{}
	}
	t.actions[cluster][a]++
}

// Actions is how many of a cluster's objects each action went to.
func (t *Tally) Actions(cluster string) map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.actions[cluster]
}

// AddGate records a gate's outcome for a cluster: "check smoke passed".
func (t *Tally) AddGate(cluster, outcome string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.gates == nil {
		t.gates = map[string][]string{}
	}
	t.gates[cluster] = append(t.gates[cluster], outcome)
}

// Gates are the outcomes of a cluster's gates, in order.
func (t *Tally) Gates(cluster string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.gates[cluster]
}

// SetRevision records the revision an app's apply left current on a
// cluster.
func (t *Tally) SetRevision(cluster, app string, n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.revisions == nil {
		t.revisions = map[string]map[string]int{}
	}
	if t.revisions[cluster] == nil {
		t.revisions[cluster] = map[string]int{}
	}
	t.revisions[cluster][app] = n
}

// Revisions is the current revision of each app of a cluster.
func (t *Tally) Revisions(cluster string) map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.revisions[cluster])
}
