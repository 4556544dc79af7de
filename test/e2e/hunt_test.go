package e2e

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
)

// TestHunt is a seeded, model-based hunt for data loss (the idea of
// Jepsen and of testing/quick): random sequences of steps on a real API
// server — applies with --prune (and --atomic) of random renders of three
// apps (objects added, removed, changed, moved between apps, marked
// fleet.kubectl.io/prune: disabled; a Namespace with objects in it, a CRD
// with custom resources, Secrets), a foreign actor creating, copying
// (our part-of label included) and labelling objects, another fleet with
// an app of the same name, the apps' tests beside a foreign object of a
// test's name, delete, rollback, the digest key deleted, and applies
// disrupted (hunt_faults_test.go: a run killed mid-apply, two runs at
// once, a run that loses its lease) or blind (hunt_restricted_test.go:
// an identity that may not list Secrets or the custom resources, one
// that may not list the inventories, discovery failing for a group
// version) or without --force-conflicts, every command through a fault
// proxy. The foreign actor's objects carry content, live in the apps'
// Namespace too, disappear and come back; moves go both ways; half the
// mutations are aimed where a broken rule would lose something (aim).
// After each step the invariants:
//
//   - an object the foreign actor made is never deleted, nor changed
//     while no app renders its name;
//   - an object released (prune: disabled, adopted) is never deleted;
//   - an object rendered at two consecutive applies keeps its uid, and
//     after a successful apply the cluster holds every app's render;
//   - what an app created and no longer renders is gone after a prune or
//     its delete;
//   - a rollback to the previous revision succeeds and restores it;
//   - no two runs write one app at once, a run that lost its lease
//     stops, and the apply after a disrupted one succeeds;
//   - a run that cannot read something deletes nothing still rendered
//     and nothing no app owns;
//   - an apply without --force-conflicts leaves a field someone else
//     set as it was, and fails only for such a conflict;
//   - no Secret value appears in any output.
//
// HUNT_SHRINK=0 reports the whole sequence without looking for a shorter
// one; HUNT_ONLY=other-fleet,lost-lease,move,… generates only applies
// and the steps named (applies that move, keep or touch the CRD only
// when "move", "keep", "crd" are named), to hunt one problem at a time.
// HUNT_SEED (seeds one after the other, "1,2,3"; default huntSeeds, or
// "random"), HUNT_STEPS (per seed, default huntSteps) and HUNT_DURATION
// (run seeds one after the other until it passes: make hunt; a fixed
// seed is run again and again, to catch a violation that depends on a
// disrupted run's timing) choose the run; HUNT_PLUGIN_DIR puts another
// build of the plugin on PATH (an earlier release, to see what the hunt
// finds in it). A
// violation prints the seed and the shortest sequence of steps found
// that reproduces it, replayed on fresh names.
// make test's hunt: several short seeds find more than one long one, as
// each starts from an empty world where the rules are decided most
// (measured with go run ./hack/mutants -hunt: docs/security.md).
var (
	huntSeeds = []uint64{1, 2, 3}
	huntSteps = 90
)

func TestHunt(t *testing.T) {
	steps := envInt(t, "HUNT_STEPS", huntSteps)
	seeds := huntSeeds
	switch v := os.Getenv("HUNT_SEED"); v {
	case "":
	case "random":
		seeds = []uint64{rand.Uint64()}
	default:
		seeds = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
			if err != nil {
				t.Fatalf("HUNT_SEED: %v", err)
			}
			seeds = append(seeds, n)
		}
	}
	seed := seeds[0]
	var until time.Time
	if d := os.Getenv("HUNT_DURATION"); d != "" {
		dur, err := time.ParseDuration(d)
		if err != nil {
			t.Fatalf("HUNT_DURATION: %v", err)
		}
		until = time.Now().Add(dur)
	}
	h := newHunter(t)
	var again []step // a fixed seed's steps, replayed
	for run := 0; ; run++ {
		t.Logf("hunt: seed %d, %d steps", seed, steps)
		start := time.Now()
		seq, v := h.run(seed, steps, again)
		if v != nil {
			t.Logf("hunt: seed %d found after %d steps: %s", seed, len(seq), v)
			short := seq
			if os.Getenv("HUNT_SHRINK") != "0" {
				short = h.shrink(seed, seq, kindOf(v))
			}
			var b strings.Builder
			for i, s := range short {
				fmt.Fprintf(&b, "\n  %2d. %s", i+1, s)
			}
			_, v2 := h.run(seed, len(short), short)
			t.Fatalf("data-loss hunt: seed %d: %s\nshortest sequence found (%d of %d steps; HUNT_SEED=%d reproduces the whole run):%s\nits violation: %v", seed, v, len(short), len(seq), seed, b.String(), v2)
		}
		kinds := map[string]int{}
		for _, s := range seq {
			if s.Kind == "foreign-ns" && s.Flag != "" {
				kinds[s.Kind+" "+s.Flag]++ // aimHeld's
				continue
			}
			kinds[s.Kind]++
		}
		t.Logf("hunt: seed %d: %d steps, no violation (%.0fs); steps done by kind: %v", seed, len(seq), time.Since(start).Seconds(), kinds)
		if run+1 < len(seeds) {
			seed = seeds[run+1]
			continue
		}
		if until.IsZero() || time.Now().After(until) {
			return
		}
		if os.Getenv("HUNT_SEED") == "random" {
			seed = rand.Uint64()
		} else {
			again, steps = seq, len(seq) // its disrupted steps' timing varies
		}

	}
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" || v == "random" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return n
}

// hunter runs sequences of steps on fleet-c1.
type hunter struct {
	t       *testing.T
	dyn     dynamic.Interface
	pathEnv string
	// kubeconfig points fleet-c1 at a fault proxy in front of it: every
	// step's commands go through one.
	kubeconfig string
	runs       int
	// groups are the API groups the server serves, the core one aside.
	groups []string
	// only, when not nil, are the kinds of steps generated besides
	// applies, and what applies may do ("move", "keep", "crd"): HUNT_ONLY.
	only map[string]bool
}

func newHunter(t *testing.T) *hunter {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(&clientcmd.ClientConfigLoadingRules{ExplicitPath: env.Kubeconfig}, &clientcmd.ConfigOverrides{CurrentContext: "fleet-c1"}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	cfg.WarningHandler = rest.NoWarnings{} // the Endpoints key's deprecation
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &hunter{t: t, dyn: dyn, pathEnv: pathEnv}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := dc.ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups.Groups {
		if g.Name != "" {
			h.groups = append(h.groups, g.Name)
		}
	}
	_, h.kubeconfig = h.proxy()
	if only := os.Getenv("HUNT_ONLY"); only != "" {
		h.only = map[string]bool{}
		for _, k := range strings.Split(only, ",") {
			h.only[strings.TrimSpace(k)] = true
		}
	}
	if dir := os.Getenv("HUNT_PLUGIN_DIR"); dir != "" {
		h.pathEnv = dir + string(os.PathListSeparator) + pathEnv
	}
	return h
}

// step is one step of a sequence: generated from the world as it is, and
// replayed as it was said (a step whose preconditions no longer hold is
// skipped), so that a shorter sequence can be tried.
type step struct {
	Kind string
	Op   string // apply: add (or change), move, remove
	App  string // apply: the app changed (mutations), delete, rollback
	To   string // move: the app it goes to
	Key  string
	Data string
	Keep bool
	Flag string // apply: "--atomic"
	// Writes is how many writes a disrupted run sends before its fault
	// (kill, lost-lease); Signal is kill's (SIGINT or SIGKILL).
	Writes int
	Signal string
}

func (s step) String() string {
	var parts []string
	for _, p := range []string{s.Op, s.App, s.To, s.Key, s.Data, s.Flag} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	if s.Keep {
		parts = append(parts, "prune: disabled")
	}
	if s.Writes > 0 {
		parts = append(parts, fmt.Sprintf("after %d writes", s.Writes))
	}
	if s.Signal != "" {
		parts = append(parts, s.Signal)
	}
	return s.Kind + " " + strings.Join(parts, " ")
}

// mutates reports whether the step changes the renders and applies them.
func (s step) mutates() bool {
	switch s.Kind {
	case "apply", "kill", "two-runs", "lost-lease", "restricted", "no-force", "one-app":
		return true
	}
	return false
}

// spec is an object as an app renders it.
type spec struct {
	data string
	keep bool // fleet.kubectl.io/prune: disabled
}

// world is the model: what each app renders, and what must hold.
type world struct {
	p       string // the names' prefix: fresh for every run
	dir     string
	apps    []string
	render  map[string]map[string]spec // app → key → spec
	revs    map[string][]map[string]spec
	applied map[string]spec // the last spec applied of each key
	// uids are the uids of the objects the apps render, as the last
	// successful apply left them.
	uids map[string]types.UID
	// foreign are the foreign actor's objects (key → uid) and pristine
	// their data while no app rendered them.
	foreign  map[string]types.UID
	pristine map[string]string
	// released are keys no app owns any more that must stay: adopted or
	// prune: disabled when they left the render.
	released map[string]bool
	// ours are keys an app created (not adopted) and still owns.
	ours    map[string]bool
	secrets []string
	n       int
	// gone are foreign keys the foreign actor deleted, which may come
	// back; labelled are keys it labelled since an app last took them
	// (a field of its own an apply without --force-conflicts meets).
	gone     []string
	labelled map[string]bool
	// rbac: the restricted identities of this run exist.
	rbac bool
	// held counts aimHeld's objects put in Namespace two (from the
	// seed, so that seeds start with different kinds).
	held int
	// keyReplaced: the digest key was deleted since the apps' last
	// applies; the next apply of an app with a Secret records a revision
	// even of the same render (its digest is under the new key).
	keyReplaced map[string]bool
}

// The keys: ConfigMaps c0..c5 and Secrets s0, s1 in namespace "one"
// (made by the test, foreign); the Namespace "two" and ConfigMaps t0, t1
// in it (rendered by the app that renders "two"); the CRD and its custom
// resources h0, h1 in "one" (rendered by the app that renders the CRD);
// the Endpoints e0 (of a Service with no selector) in "two", which any
// app may render while "two" is there: the Namespace's guard takes
// Endpoints for the cluster's own, so only the ownership rule keeps
// "two" for it.
var huntKeys = []string{"cm/c0", "cm/c1", "cm/c2", "cm/c3", "cm/c4", "cm/c5", "secret/s0", "secret/s1", "ns/two", "cm2/t0", "cm2/t1", "crd/hunts", "cr/h0", "cr/h1", "ep/e0"}

// parentKey is the key an object needs rendered by the same app.
func parentKey(key string) string {
	switch {
	case strings.HasPrefix(key, "cm2/"):
		return "ns/two"
	case strings.HasPrefix(key, "cr/"):
		return "crd/hunts"
	}
	return ""
}

func (w *world) ns(which string) string { return w.p + "-" + which }
func (w *world) group() string          { return w.p + ".hunt.example.com" }
func (w *world) app(a string) string    { return w.p + "-" + a }

// gvr and the namespace and name of a key.
func (w *world) ref(key string) (schema.GroupVersionResource, string, string) {
	kind, name, _ := strings.Cut(key, "/")
	switch kind {
	case "cm", "fcm":
		return schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, w.ns("one"), name
	case "cm2", "fcm2", "fown2", "fgone2":
		return schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, w.ns("two"), name
	case "fsec2":
		return schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, w.ns("two"), name
	case "fsa2":
		return schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}, w.ns("two"), name
	case "frole2":
		return rbacResource("roles"), w.ns("two"), name
	case "secret":
		return schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, w.ns("one"), name
	case "ep":
		return schema.GroupVersionResource{Version: "v1", Resource: "endpoints"}, w.ns("two"), name
	case "ns":
		return schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "", w.ns(name)
	case "crd":
		return schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}, "", "hunts." + w.group()
	case "cr", "fcr":
		return schema.GroupVersionResource{Group: w.group(), Version: "v1", Resource: "hunts"}, w.ns("one"), name
	}
	panic("key " + key)
}

// manifest is key's object as rendered.
func (w *world) manifest(key string, s spec) string {
	_, ns, name := w.ref(key)
	ann := ""
	if s.keep {
		ann = "\n  annotations: {fleet.kubectl.io/prune: disabled}"
	}
	meta := fmt.Sprintf("metadata:\n  name: %s\n  namespace: %s%s\n", name, ns, ann)
	switch kind, _, _ := strings.Cut(key, "/"); kind {
	case "cm", "cm2":
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\n%sdata: {v: %q}\n", meta, s.data)
	case "secret":
		return fmt.Sprintf("apiVersion: v1\nkind: Secret\n%sstringData: {v: %q}\n", meta, "hunt-secret-"+s.data)
	case "ns":
		return fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s%s\n  labels: {v: %q}\n", name, ann, s.data)
	case "ep":
		return fmt.Sprintf("apiVersion: v1\nkind: Endpoints\nmetadata:\n  name: %s\n  namespace: %s%s\n  labels: {v: %q}\nsubsets: [{addresses: [{ip: 10.0.0.1}], ports: [{port: 80}]}]\n", name, ns, ann, s.data)
	case "crd":
		return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %s%s
  labels: {v: %q}
spec:
  group: %s
  names: {kind: Hunt, plural: hunts, singular: hunt}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`, name, ann, s.data, w.group())
	case "cr":
		return fmt.Sprintf("apiVersion: %s/v1\nkind: Hunt\n%sspec: {v: %q}\n", w.group(), meta, s.data)
	}
	panic(key)
}

func (w *world) owner(key string) string {
	for _, a := range w.apps {
		if _, ok := w.render[a][key]; ok {
			return a
		}
	}
	return ""
}

func (w *world) write(t *testing.T, file string, otherFleet bool, tests bool) string {
	name, apps := w.p, "apps"
	if otherFleet {
		name, apps = w.p+"-other", "apps-other"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: fleet/v1alpha1\nkind: Fleet\nmetadata: {name: %s}\ngroups: [{name: staging}]\nclusters: [{name: hunt, group: staging, context: fleet-c1}]\napps:\n", name)
	for _, a := range w.apps {
		extra := ""
		if tests && a == "a" {
			extra = ", tests: tests/a"
		}
		fmt.Fprintf(&b, "  - {name: %s, manifests: %s/%s%s}\n", w.app(a), apps, a, extra)
	}
	must(t, os.WriteFile(filepath.Join(w.dir, file), []byte(b.String()), 0o644))
	for _, a := range w.apps {
		docs := []string{fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: base-%s, namespace: %s}\n", a, w.ns("one"))}
		keys := make([]string, 0, len(w.render[a]))
		for k := range w.render[a] {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			docs = append(docs, w.manifest(k, w.render[a][k]))
		}
		must(t, os.MkdirAll(filepath.Join(w.dir, apps, a), 0o755))
		must(t, os.WriteFile(filepath.Join(w.dir, apps, a, "all.yaml"), []byte(strings.Join(docs, "---\n")), 0o644))
	}
	must(t, os.MkdirAll(filepath.Join(w.dir, "tests", "a"), 0o755))
	must(t, os.WriteFile(filepath.Join(w.dir, "tests", "a", "smoke.yaml"), []byte(fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: smoke, namespace: %s}\ndata: {v: test}\n", w.ns("one"))), 0o644))
	return filepath.Join(w.dir, file)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// run plays a sequence: generated from seed (until n steps are done), or
// replayed (replay not nil). It returns the steps done and the first
// violation.
func (h *hunter) run(seed uint64, n int, replay []step) ([]step, error) {
	t := h.t
	h.runs++
	rng := rand.New(rand.NewPCG(seed, 0)) // the same steps for a seed, whatever ran before
	w := &world{
		p: fmt.Sprintf("h%d-%d", seed%10000, h.runs), dir: t.TempDir(), apps: []string{"a", "b", "c"},
		render: map[string]map[string]spec{"a": {}, "b": {}, "c": {}}, revs: map[string][]map[string]spec{},
		applied: map[string]spec{}, uids: map[string]types.UID{}, foreign: map[string]types.UID{}, pristine: map[string]string{},
		released: map[string]bool{}, ours: map[string]bool{}, labelled: map[string]bool{}, held: int(seed % 4),
	}
	ctx := context.Background()
	defer h.cleanup(w)
	// Namespace "one" is the test's: foreign, never to be deleted.
	if _, err := h.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": w.ns("one")}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var done []step
	for i := 0; len(done) < n && (replay == nil || i < len(replay)); i++ {
		var s step
		if replay != nil {
			s = replay[i]
		} else {
			s = h.generate(rng, w)
		}
		ok, err := h.do(ctx, w, s)
		if !ok {
			continue // preconditions no longer hold (replay)
		}
		done = append(done, s)
		if os.Getenv("HUNT_VERBOSE") == "1" {
			t.Logf("hunt: step %d: %s", len(done), s)
		}
		if err == nil {
			err = h.check(ctx, w)
		}
		if err != nil {
			return done, fmt.Errorf("step %d (%s): %w", len(done), s, err)
		}
	}
	return done, nil
}

// cleanup deletes what a run left (its namespaces, the CRD, the apps'
// inventories and revisions), best effort.
func (h *hunter) cleanup(w *world) {
	ctx := context.Background()
	h.cleanupRBAC(ctx, w)
	for _, key := range []string{"ns/one", "ns/two", "crd/hunts"} {
		gvr, _, name := w.ref(key)
		_ = h.dyn.Resource(gvr).Delete(ctx, name, metav1.DeleteOptions{})
	}
	for _, a := range w.apps {
		_ = h.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("kubectl-fleet").Delete(ctx, inventory.ParentName(w.app(a)), metav1.DeleteOptions{})
		_ = h.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace("kubectl-fleet").DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "fleet.kubectl.io/app=" + w.app(a)})
	}
}

// generate picks a step that is valid in w.
func (h *hunter) generate(rng *rand.Rand, w *world) step {
	for {
		s := h.candidate(rng, w)
		if h.only == nil {
			return s
		}
		switch {
		case s.Kind != "apply" && !h.only[s.Kind]:
			continue
		case s.mutates() && !h.only["crd"] && (strings.HasPrefix(s.Key, "cr") || strings.HasPrefix(s.Key, "crd")):
			continue
		}
		if !h.only["move"] && (s.Op == "move" || s.Op == "swap") {
			s.Op = "change"
		}
		if !h.only["keep"] {
			s.Keep = false
		}
		return s
	}
}

// candidate picks a step at random.
func (h *hunter) candidate(rng *rand.Rand, w *world) step {
	app := w.apps[rng.IntN(len(w.apps))]
	data := func() string { w.n++; return fmt.Sprintf("v%d", w.n) }
	switch r := rng.IntN(100); {
	case r < 6:
		return step{Kind: "foreign-create", Key: "cm/" + []string{"c0", "c1", "c2", "c3", "c4", "c5"}[rng.IntN(6)], Data: data()}
	case r < 10:
		return step{Kind: "foreign-copy", Key: huntKeys[rng.IntN(len(huntKeys))], Data: data()}
	case r < 13:
		return step{Kind: "foreign-label", App: app, Key: huntKeys[rng.IntN(len(huntKeys))]}
	case r < 16:
		return step{Kind: "foreign-cr", Data: data()}
	case r < 18:
		return step{Kind: "foreign-smoke", Data: data()}
	case r < 21:
		return step{Kind: "tests"}
	case r < 24:
		return step{Kind: "other-fleet", App: app, Data: data()}
	case r < 27:
		return step{Kind: "delete", App: app}
	case r < 31:
		return step{Kind: "rollback", App: app}
	case r < 33:
		return step{Kind: "delete-key"}
	case r < 36:
		return step{Kind: "foreign-delete", Data: data()}
	case r < 38:
		return step{Kind: "foreign-return", Data: data()}
	case r < 41:
		return step{Kind: "foreign-ns", Data: data()}
	case r < 44:
		return step{Kind: "drift", Key: huntKeys[rng.IntN(len(huntKeys))], Data: data()}
	case r < 47:
		return step{Kind: "foreign-clear", Key: []string{"ns/two", "crd/hunts"}[rng.IntN(2)]}
	}
	// A mutation of the renders, then an apply of every app: one run, or
	// disrupted (killed, two at once, its lease lost), restricted (an
	// identity that may not list some kinds, discovery failing for a
	// group), or without --force-conflicts; then one run.
	s := step{Kind: "apply", App: app, Key: huntKeys[rng.IntN(len(huntKeys))], Data: data(), Keep: rng.IntN(4) == 0}
	s.To = w.apps[rng.IntN(len(w.apps))]
	s.Op = []string{"move", "remove", "remove", "change", "swap"}[rng.IntN(5)]
	switch r := rng.IntN(100); {
	case r < 15:
		s.Flag = "--atomic"
	case r < 21:
		s.Kind, s.Writes, s.Signal = "kill", 1+rng.IntN(12), []string{"SIGINT", "SIGKILL"}[rng.IntN(2)]
	case r < 26:
		s.Kind = "two-runs"
	case r < 30:
		s.Kind, s.Writes = "lost-lease", 1+rng.IntN(12)
	case r < 50:
		s.Kind, s.Flag = "restricted", []string{"reads", "reads", "inventories", "discovery"}[rng.IntN(4)]
	case r < 58:
		s.Kind = "no-force"
	case r < 70:
		s.Kind = "one-app"
	}
	w.aim(rng, &s, func(key string) bool { return h.exists(context.Background(), w, key) })
	return s
}

// aim points half the mutations where a broken rule would lose
// something, as the review's planted regressions showed uniform keys
// rarely do: a restricted run that cannot read takes a Namespace or CRD
// away (its guard must not read "forbidden" as "empty"), or moves a key
// out of the one app it applies (it cannot see who renders it now); an
// apply adopts a foreign object or lets an adopted one go, takes a CRD
// away from its kept custom resources, marks a custom resource kept.
func (w *world) aim(rng *rand.Rand, s *step, exists func(key string) bool) {
	if s.Kind == "apply" && rng.IntN(2) == 0 {
		w.aimHeld(s, exists)
		return
	}
	if s.Kind != "restricted" && s.Kind != "one-app" && rng.IntN(2) == 0 {
		return
	}
	var rendered, adopted, foreign []string
	for _, k := range huntKeys {
		_, theirs := w.foreign[k]
		switch {
		case w.owner(k) != "" && theirs:
			adopted = append(adopted, k)
		case w.owner(k) != "":
			rendered = append(rendered, k)
		case theirs:
			foreign = append(foreign, k)
		}
	}
	switch {
	case s.Kind == "one-app":
		// Toward a Namespace an app lets go of in a run of its own while
		// another app records objects in it that have drifted away (the
		// guard, reading the cluster, sees none of them then): only the
		// ownership rule keeps the Namespace. One stage a step: the
		// Namespace rendered, another app's Endpoints in it, those
		// deleted by someone, the Namespace taken away.
		owner, ep := w.owner("ns/two"), w.owner("ep/e0")
		others := slices.DeleteFunc(slices.Clone(w.apps), func(a string) bool { return a == owner })
		switch {
		case owner == "" && exists("ns/two") && ep != "":
			s.Kind, s.Key, s.Op = "apply", "ep/e0", "remove"
		case owner == "" && exists("ns/two"):
			s.Kind, s.Key = "foreign-clear", "ns/two" // its app made it: ours
		case owner == "":
			s.Key, s.Op, s.Keep, s.App = "ns/two", "change", false, w.apps[rng.IntN(len(w.apps))]
		case !w.ours["ns/two"] || w.applied["ns/two"].keep:
			s.Kind, s.Key, s.Op = "apply", "ns/two", "remove" // adopted or kept: let go
		case ep == owner:
			s.Kind, s.Key, s.Op, s.To = "apply", "ep/e0", "move", others[rng.IntN(len(others))]
		case ep == "":
			s.Key, s.Op, s.Keep, s.App = "ep/e0", "change", false, others[rng.IntN(len(others))]
		default:
			// What the guard would count first goes: someone's objects
			// in it, and those released there.
			var in []string
			for _, m := range []map[string]bool{w.released, keySet(w.foreign)} {
				for k := range m {
					if _, ns, _ := w.ref(k); ns == w.ns("two") && w.owner(k) == "" {
						in = append(in, k)
					}
				}
			}
			slices.Sort(in)
			if len(in) > 0 {
				s.Kind, s.Key = "foreign-delete", in[0]
				return
			}
			// Someone deletes the Endpoints right before: the next
			// apply of all apps would make them again.
			s.Key, s.Op, s.App, s.Flag = "ns/two", "remove", owner, "after drift"
		}
	case s.Kind == "restricted" && s.Flag == "reads":
		// Toward a Namespace or CRD an app made itself, with someone
		// else's object in it, taken away by a run that may not list
		// all it holds: only its guard decides then. One stage a step:
		// let an adopted one go, clear one no app renders, make it,
		// put a foreign object in, take it away.
		t := []string{"ns/two", "crd/hunts"}[rng.IntN(2)]
		foreignIn := false
		for k := range w.foreign {
			foreignIn = foreignIn || canon(k) != k && rootKey(canon(k)) == t
		}
		s.Key, s.Op, s.Keep = t, "remove", false
		switch {
		case w.owner(t) != "" && (!w.ours[t] || w.applied[t].keep):
			s.Kind, s.Flag = "apply", "" // released, not deleted
		case w.owner(t) == "" && exists(t):
			s.Kind, s.Flag = "foreign-clear", ""
		case w.owner(t) != "" && !foreignIn && t == "ns/two":
			s.Kind, s.Flag = "foreign-ns", ""
		case w.owner(t) != "" && !foreignIn:
			s.Kind, s.Flag = "foreign-cr", ""
		}
	case s.Kind == "restricted" && s.Flag == "inventories" && len(rendered) > 0:
		s.Key, s.Op = rendered[rng.IntN(len(rendered))], "move"
		if from := w.owner(s.Key); s.To == from {
			s.To = w.apps[(slices.Index(w.apps, from)+1)%len(w.apps)]
		}
	case len(foreign) > 0 && rng.IntN(3) == 0:
		s.Key, s.Op = foreign[rng.IntN(len(foreign))], "change"
	case len(adopted) > 0 && rng.IntN(2) == 0:
		s.Key, s.Op = adopted[rng.IntN(len(adopted))], []string{"remove", "move"}[rng.IntN(2)]
	case rng.IntN(2) == 0:
		w.aimKept(s, exists)
	default:
		s.Key, s.Keep = []string{"cr/h0", "cr/h1", "ep/e0"}[rng.IntN(3)], true
	}
}

// heldKinds are what aimHeld puts in Namespace two, in turn: kinds
// someone keeps beside an app's objects, and an object a live
// cluster-scoped object owns.
var heldKinds = []string{"fsec2", "fown2", "fsa2", "frole2"}

// aimHeld walks Namespace two, one stage a step, toward the case only
// what the Namespace guard lists and how it judges owners decide: made
// by an app, nothing of any app's left in it, one object of someone
// else's (of each of heldKinds in turn), the Namespace let go of by an
// apply that may read everything.
func (w *world) aimHeld(s *step, exists func(string) bool) {
	owner, ep := w.owner("ns/two"), w.owner("ep/e0")
	held := false
	for k := range w.foreign {
		held = held || canon(k) != k && rootKey(canon(k)) == "ns/two"
	}
	switch {
	case ep != "":
		s.Key, s.Op = "ep/e0", "remove"
	case owner == "" && exists("ns/two"):
		s.Kind, s.Key = "foreign-clear", "ns/two"
	case owner == "":
		s.Key, s.Op, s.Keep = "ns/two", "change", false
	case !w.ours["ns/two"] || w.applied["ns/two"].keep:
		s.Key, s.Op = "ns/two", "remove" // adopted or kept: let go
	case !held:
		s.Kind, s.Flag = "foreign-ns", heldKinds[w.held%len(heldKinds)]
		w.held++
	default:
		s.Key, s.Op = "ns/two", "remove"
	}
}

// aimKept walks the CRD, one stage a step, toward the case only the
// count of its custom resources decides: made by its app, no one else's
// custom resource, one of its own kept (prune: disabled), the CRD taken
// away with it. The kept one must be spared from the count.
func (w *world) aimKept(s *step, exists func(string) bool) {
	owner := w.owner("crd/hunts")
	var theirs []string
	for k := range w.foreign {
		if strings.HasPrefix(k, "fcr/") {
			theirs = append(theirs, k)
		}
	}
	slices.Sort(theirs)
	kept := w.applied["cr/h0"].keep && w.owner("cr/h0") != "" || w.applied["cr/h1"].keep && w.owner("cr/h1") != ""
	s.Keep = false
	switch {
	case owner == "" && exists("crd/hunts"):
		s.Kind, s.Key = "foreign-clear", "crd/hunts"
	case owner == "":
		s.Key, s.Op = "crd/hunts", "change"
	case !w.ours["crd/hunts"] || w.applied["crd/hunts"].keep:
		s.Key, s.Op = "crd/hunts", "remove" // adopted or kept: let go
	case len(theirs) > 0:
		s.Kind, s.Key = "foreign-delete", theirs[0]
	case !kept:
		s.Key, s.Op, s.Keep = "cr/h0", "change", true
	default:
		s.Key, s.Op = "crd/hunts", "remove"
	}
}

// mutate changes the renders as an apply step says (Op): its key added
// to App's render (a key that needs another joins the app that renders
// that one, or comes with it), moved to To's with what goes with it
// (swap: and one of To's keys, with what goes with it, the other way),
// changed, or removed with what needs it. An op that does not fit the
// key's state changes it instead.
func (w *world) mutate(s step) {
	root := rootKey(s.Key)
	from := w.owner(s.Key)
	switch {
	case from == "":
		app := s.App
		if o := w.owner(root); o != "" {
			app = o
		} else if root != s.Key {
			w.render[app][root] = spec{data: s.Data}
		}
		w.render[app][s.Key] = spec{data: s.Data, keep: s.Keep}
	case (s.Op == "move" || s.Op == "swap") && from != s.To:
		var back string // swap: the first of To's other families
		for _, k := range slices.Sorted(maps.Keys(w.render[s.To])) {
			if r := rootKey(k); s.Op == "swap" && back == "" && r != root {
				back = r
			}
		}
		w.move(root, from, s.To)
		if back != "" {
			w.move(back, s.To, from)
		}
	case s.Op == "remove":
		delete(w.render[from], s.Key)
		if s.Key == root {
			for _, k := range family(root) {
				delete(w.render[from], k)
			}
		}
	default:
		w.render[from][s.Key] = spec{data: s.Data, keep: s.Keep}
	}
}

func keySet[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// canon is a foreign key as the key of an app's that lives where it
// does ("fcm2/x", "fsec2/x", any "f…2/x" as "cm2/x", in Namespace two;
// "fcr/x" as "cr/x").
func canon(key string) string {
	kind, name, _ := strings.Cut(key, "/")
	switch {
	case kind == "fcr":
		return "cr/" + name
	case strings.HasPrefix(kind, "f") && strings.HasSuffix(kind, "2"):
		return "cm2/" + name
	}
	return key
}

// rootKey is the key key needs rendered by its app, or key itself.
func rootKey(key string) string {
	if p := parentKey(key); p != "" {
		return p
	}
	return key
}

// family is root and the keys that need it.
func family(root string) []string {
	out := []string{root}
	for _, k := range huntKeys {
		if parentKey(k) == root {
			out = append(out, k)
		}
	}
	return out
}

// move hands root's family from one app's render to another's.
func (w *world) move(root, from, to string) {
	for _, k := range family(root) {
		if sp, ok := w.render[from][k]; ok {
			delete(w.render[from], k)
			w.render[to][k] = sp
		}
	}
}

func (w *world) hasKey(app, key string) bool { _, ok := w.render[app][key]; return ok }

// fleet runs kubectl fleet with the plugin of this hunt on PATH.
func (h *hunter) fleet(w *world, args ...string) (string, int) {
	out, errOut, code := runCmd(h.t, h.command(h.kubeconfig, args...), "")
	h.log(args, out+errOut, code)
	return out + errOut, code
}

// log shows a command's output with HUNT_VERBOSE=1.
func (h *hunter) log(args []string, out string, code int) {
	if os.Getenv("HUNT_VERBOSE") == "1" {
		h.t.Logf("$ kubectl fleet %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
}

// command is kubectl fleet with the plugin of this hunt on PATH, through
// the kubeconfig kc.
func (h *hunter) command(kc string, args ...string) *exec.Cmd {
	cmd := kubectlCmd(h.t, append([]string{"fleet"}, args...)...)
	for i, e := range cmd.Env {
		switch {
		case strings.HasPrefix(e, "PATH="):
			cmd.Env[i] = "PATH=" + h.pathEnv
		case strings.HasPrefix(e, "KUBECONFIG="):
			cmd.Env[i] = "KUBECONFIG=" + kc
		}
	}
	return cmd
}

// do runs one step and updates the model. ok is false when the step's
// preconditions do not hold in w (a step of a longer sequence replayed).
func (h *hunter) do(ctx context.Context, w *world, s step) (ok bool, err error) {
	switch s.Kind {
	case "apply":
		before := w.snapshot()
		w.mutate(s)
		if w.owner("ep/e0") != "" && !h.canHold(ctx, w, "ep/e0") {
			w.render = before // Endpoints with no Namespace for them
			return false, nil
		}
		return true, h.applyAll(ctx, w, before, s.Flag)
	case "kill", "two-runs", "lost-lease", "restricted", "no-force":
		// Not while a replaced key is pending: a disrupted run may record
		// the revision the model expects of the next apply.
		if len(w.keyReplaced) > 0 {
			return false, nil
		}
		before := w.snapshot()
		w.mutate(s)
		if w.owner("ep/e0") != "" && !h.canHold(ctx, w, "ep/e0") {
			w.render = before // Endpoints with no Namespace for them
			return false, nil
		}
		switch s.Kind {
		case "restricted":
			err = h.restricted(ctx, w, s, before)
		case "no-force":
			var done bool
			if done, err = h.noForce(ctx, w, before); done || err != nil {
				return true, err
			}
		default:
			err = h.disrupted(ctx, w, s, before)
		}
		if err != nil {
			return true, err
		}
		return true, h.applyAll(ctx, w, before, "")
	case "foreign-create":
		if w.owner(s.Key) != "" || h.exists(ctx, w, s.Key) {
			return false, nil
		}
		return true, h.foreignCreate(ctx, w, s.Key, map[string]any{"v": s.Data}, nil)
	case "foreign-copy":
		gvr, ns, name := w.ref(s.Key)
		live, err := h.dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil || gvr.Resource != "configmaps" {
			return false, nil
		}
		// A copy under another name, every label kept (ours too).
		key := "fcm/copy-" + s.Data
		if strings.HasPrefix(s.Key, "cm2/") {
			return false, nil
		}
		data, _, _ := unstructured.NestedStringMap(live.Object, "data")
		anyData := map[string]any{}
		for k, v := range data {
			anyData[k] = v
		}
		return true, h.foreignCreate(ctx, w, key, anyData, live.GetLabels())
	case "foreign-label":
		var keys []string
		for k := range w.foreign {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if len(keys) == 0 {
			return false, nil
		}
		key := keys[len(s.Key)%len(keys)]
		if w.owner(key) != "" {
			return false, nil
		}
		gvr, ns, name := w.ref(key)
		patch := fmt.Sprintf(`{"metadata":{"labels":{"applyset.kubernetes.io/part-of":%q}}}`, inventory.ID(w.app(s.App)))
		_, err := h.dyn.Resource(gvr).Namespace(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		w.labelled[key] = true
		return true, err
	case "foreign-cr":
		// Only while the CRD serves its kind (established, not being
		// deleted).
		gvr, _, name := w.ref("crd/hunts")
		crd, err := h.dyn.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
		if err != nil || crd.GetDeletionTimestamp() != nil || !established(crd) {
			return false, nil
		}
		if err := h.foreignCreate(ctx, w, "fcr/f"+s.Data, map[string]any{"v": s.Data}, nil); err != nil && !apierrors.IsNotFound(errors.Unwrap(err)) {
			return true, err
		} else if err != nil {
			return false, nil // the kind is not served yet
		}
		return true, nil
	case "drift":
		// Someone deletes an object an app renders (not one it adopted or
		// released, which untouched holds): the next apply makes it
		// again. A guard that reads the cluster no longer sees it; the
		// records still do.
		key := s.Key
		if w.uids[key] == "" && w.uids["ep/e0"] != "" {
			key = "ep/e0"
		}
		_, theirs := w.foreign[key]
		if w.uids[key] == "" || w.released[key] || theirs || key == "ns/two" || key == "crd/hunts" {
			return false, nil
		}
		gvr, ns, name := w.ref(key)
		if err := h.dyn.Resource(gvr).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			return true, err
		}
		delete(w.uids, key)
		return true, nil
	case "foreign-clear":
		// Someone deletes the Namespace or CRD no app renders any more,
		// with all it holds: the next app that renders it creates it,
		// and its guard is asked again when it lets it go.
		inside := func(k string) bool {
			return rootKey(k) == s.Key || k == "ep/e0" && s.Key == "ns/two" || canon(k) != k && rootKey(canon(k)) == s.Key
		}
		for _, a := range w.apps {
			for k := range w.render[a] {
				if k == s.Key || inside(k) {
					return false, nil // an app renders it, or something in it
				}
			}
		}
		if !h.exists(ctx, w, s.Key) {
			return false, nil
		}
		gvr, _, name := w.ref(s.Key)
		if err := h.dyn.Resource(gvr).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return true, err
		}
		for deadline := time.Now().Add(time.Minute); h.exists(ctx, w, s.Key); time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				return true, fmt.Errorf("%s, deleted by someone, is still there a minute later", s.Key)
			}
		}
		for _, m := range []map[string]bool{w.released, w.labelled} {
			for k := range m {
				if k == s.Key || inside(k) {
					delete(m, k)
				}
			}
		}
		for k := range w.foreign {
			if inside(k) {
				delete(w.foreign, k)
				delete(w.pristine, k)
			}
		}
		w.gone = slices.DeleteFunc(w.gone, inside)
		delete(w.ours, s.Key)
		return true, nil
	case "one-app":
		// Only App's render changes, and only App is applied.
		if len(w.keyReplaced) > 0 {
			return false, nil
		}
		if o := w.owner(s.Key); o != "" {
			s.App = o // the app that renders the key
		}
		if s.Op == "move" || s.Op == "swap" {
			s.Op = "change"
		}
		if s.Flag == "after drift" && w.uids["ep/e0"] != "" {
			gvr, ns, name := w.ref("ep/e0")
			if err := h.dyn.Resource(gvr).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				return true, err
			}
			delete(w.uids, "ep/e0")
		}
		before := w.snapshot()
		w.mutate(s)
		for _, a := range w.apps {
			if a != s.App && !sameRender(before[a], w.render[a]) {
				w.render = before // the op reached another app
				return false, nil
			}
		}
		if w.owner("ep/e0") != "" && !h.canHold(ctx, w, "ep/e0") {
			w.render = before
			return false, nil
		}
		args := []string{"-F", w.write(h.t, "fleet.yaml", false, false), "apply", "--app", w.app(s.App), "--prune", "--allow-empty", "--yes", "--force-conflicts"}
		out, code := h.applyRun(ctx, w, h.kubeconfig, args)
		if err := w.secretFree(out); err != nil {
			return true, err
		}
		if code != 0 {
			return true, fmt.Errorf("apply: exit %d\n%s", code, out)
		}
		return true, h.afterApply(ctx, w, before, s.App)
	case "foreign-ns":
		// Inside a Namespace an app renders, what people keep beside an
		// app's objects: a ConfigMap, a Secret, a ServiceAccount, a
		// Role, one owned by a cluster-scoped object that is there
		// (Namespace one, as a Crossplane composite owns its parts):
		// each keeps the Namespace. One whose cluster-scoped owner is
		// gone is garbage the collector takes: it keeps nothing, and it
		// is not the foreign actor's to keep.
		kind := s.Flag // aimed (aimHeld)
		if kind == "" {
			kind = []string{"fcm2", "fsec2", "fsa2", "frole2", "fown2", "fgone2"}[pick(s.Data, 6)]
		}
		key := kind + "/f" + s.Data
		if !h.canHold(ctx, w, key) {
			return false, nil
		}
		return true, h.foreignCreate(ctx, w, key, map[string]any{"v": s.Data}, nil)
	case "foreign-delete":
		// The foreign actor deletes one of its objects no app renders (or
		// the one named, its own or one released).
		var keys []string
		for k := range w.foreign {
			if w.owner(k) == "" {
				keys = append(keys, k)
			}
		}
		_, theirs := w.foreign[s.Key]
		if s.Key != "" && w.owner(s.Key) == "" && (theirs || w.released[s.Key]) {
			keys = []string{s.Key}
		}
		if len(keys) == 0 {
			return false, nil
		}
		slices.Sort(keys)
		key := keys[pick(s.Data, len(keys))]
		gvr, ns, name := w.ref(key)
		if err := h.dyn.Resource(gvr).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return true, err
		}
		delete(w.foreign, key)
		delete(w.released, key)
		delete(w.pristine, key)
		delete(w.labelled, key)
		w.gone = append(w.gone, key)
		return true, nil
	case "foreign-return":
		// ... and makes it again, with other content.
		if len(w.gone) == 0 {
			return false, nil
		}
		i := pick(s.Data, len(w.gone))
		key := w.gone[i]
		if w.owner(key) != "" || h.exists(ctx, w, key) || !h.canHold(ctx, w, key) {
			return false, nil
		}
		w.gone = slices.Delete(w.gone, i, i+1)
		err := h.foreignCreate(ctx, w, key, map[string]any{"v": s.Data}, nil)
		if err != nil && apierrors.IsNotFound(errors.Unwrap(err)) {
			return true, nil // its kind is not served yet
		}
		return true, err
	case "foreign-smoke":
		if h.exists(ctx, w, "fcm/smoke") {
			return false, nil
		}
		return true, h.foreignCreate(ctx, w, "fcm/smoke", map[string]any{"v": s.Data}, nil)
	case "tests":
		// App a's tests, its render unchanged: a foreign object of the
		// test object's name is refused, never deleted.
		if len(w.revs["a"]) == 0 {
			return false, nil
		}
		h.untilDeleted(ctx, w, w.snapshot())
		out, code := h.fleet(w, "-F", w.write(h.t, "fleet-tests.yaml", false, true), "apply", "--app", w.app("a"), "--prune", "--allow-empty", "--yes", "--force-conflicts")
		if err := w.secretFree(out); err != nil {
			return true, err
		}
		if w.keyReplaced["a"] && hasSecret(w.render["a"]) {
			w.revs["a"] = append(w.revs["a"], clone(w.render["a"]))
		}
		delete(w.keyReplaced, "a")
		_, foreignSmoke := w.foreign["fcm/smoke"]
		if code != 0 && !foreignSmoke {
			return true, fmt.Errorf("the tests failed with no foreign object in their way: exit %d\n%s", code, out)
		}
		return true, nil
	case "other-fleet":
		// Another fleet, with an app of the same name, renders only its
		// base ConfigMap there: refused, never merged (merged, its
		// prune would delete the first fleet's objects).
		if len(w.revs[s.App]) == 0 || len(w.render[s.App]) == 0 {
			return false, nil
		}
		saved := w.render
		w.render = map[string]map[string]spec{"a": {}, "b": {}, "c": {}}
		file := w.write(h.t, "fleet-other.yaml", true, false)
		w.render = saved
		out, _ := h.fleet(w, "-F", file, "apply", "--app", w.app(s.App), "--prune", "--allow-empty", "--yes", "--force-conflicts")
		return true, w.secretFree(out)
	case "delete":
		if len(w.revs[s.App]) == 0 {
			return false, nil
		}
		out, code := h.fleet(w, "-F", w.write(h.t, "fleet.yaml", false, false), "delete", "--app", w.app(s.App), "--yes")
		if err := w.secretFree(out); err != nil {
			return true, err
		}
		if code != 0 {
			return true, fmt.Errorf("delete: exit %d\n%s", code, out)
		}
		w.leave(s.App, w.render[s.App])
		w.render[s.App] = map[string]spec{}
		delete(w.revs, s.App)
		return true, nil
	case "rollback":
		revs := w.revs[s.App]
		if len(revs) < 2 {
			return false, nil
		}
		target := revs[len(revs)-2]
		for k := range target {
			if o := w.owner(k); o != "" && o != s.App {
				return false, nil // another app renders it now
			}
		}
		if _, ok := target["ep/e0"]; ok && !h.canHold(ctx, w, "ep/e0") {
			return false, nil // Endpoints with no Namespace for them
		}
		h.untilDeleted(ctx, w, map[string]map[string]spec{s.App: target})
		out, code := h.fleet(w, "-F", w.write(h.t, "fleet.yaml", false, false), "rollback", "--app", w.app(s.App), "--yes", "--force-conflicts")
		if err := w.secretFree(out); err != nil {
			return true, err
		}
		if code != 0 {
			return true, fmt.Errorf("rollback to the previous revision: exit %d\n%s", code, out)
		}
		before := w.snapshot()
		w.render[s.App] = clone(target)
		w.settle(before)
		w.revs[s.App] = append(revs, clone(target))
		delete(w.keyReplaced, s.App)
		return true, h.recordUIDs(ctx, w, s.App)
	case "delete-key":
		err := h.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace("kubectl-fleet").Delete(ctx, "fleet-digest-key", metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			err = nil
		}
		w.keyReplaced = map[string]bool{"a": true, "b": true, "c": true}
		return true, err
	}
	panic(s.Kind)
}

// established reports whether a CRD serves its kind.
func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

func clone(m map[string]spec) map[string]spec {
	out := make(map[string]spec, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// snapshot is every app's render.
func (w *world) snapshot() map[string]map[string]spec {
	out := map[string]map[string]spec{}
	for a, r := range w.render {
		out[a] = clone(r)
	}
	return out
}

// applyAll applies every app with --prune and checks what only an apply
// step can: it succeeded, and the uids of what stayed rendered.
func (h *hunter) applyAll(ctx context.Context, w *world, before map[string]map[string]spec, flag string) error {
	// --force-conflicts: an app that renders an object someone else
	// made (or one it released) adopts it, as a user asks it to; without
	// the flag a field of theirs with another value is a conflict, and
	// the apply fails, as it should.
	args := []string{"-F", w.write(h.t, "fleet.yaml", false, false), "apply", "--prune", "--allow-empty", "--yes", "--force-conflicts"}
	if flag != "" {
		args = append(args, flag)
	}
	out, code := h.applyRun(ctx, w, h.kubeconfig, args)
	if err := w.secretFree(out); err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("apply: exit %d\n%s", code, out)
	}
	return h.afterApply(ctx, w, before)
}

// applyRun runs an apply of w's renders through kubeconfig kc.
func (h *hunter) applyRun(ctx context.Context, w *world, kc string, args []string) (string, int) {
	w.learnSecrets()
	h.untilDeleted(ctx, w, w.snapshot())
	out, errOut, code := runCmd(h.t, h.command(kc, args...), "")
	h.log(args, out+errOut, code)
	return out + errOut, code
}

// afterApply updates the model after an apply of every app (or of the
// apps applied) succeeded, the renders changed from before, and checks
// what only an apply step can: the uids of what stayed rendered.
func (h *hunter) afterApply(ctx context.Context, w *world, before map[string]map[string]spec, applied ...string) error {
	w.settle(before)
	for _, a := range w.apps {
		if revs := w.revs[a]; len(revs) == 0 || !sameRender(revs[len(revs)-1], w.render[a]) || w.keyReplaced[a] && hasSecret(w.render[a]) {
			w.revs[a] = append(revs, clone(w.render[a]))
		}
		delete(w.keyReplaced, a)
	}
	// Rendered before and now: the same object.
	if err := h.rendered(ctx, w); err != nil {
		return err
	}
	return h.recordUIDs(ctx, w, applied...)
}

// untilDeleted waits until a Namespace or a CRD that renders hold is
// gone, when the last one is still being deleted: it cannot take objects
// until then, and a user would wait too (not what the hunt is after).
func (h *hunter) untilDeleted(ctx context.Context, w *world, renders map[string]map[string]spec) {
	for _, key := range []string{"ns/two", "crd/hunts"} {
		rendered := false
		for _, r := range renders {
			_, ok := r[key]
			rendered = rendered || ok
		}
		if !rendered {
			continue
		}
		gvr, _, name := w.ref(key)
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			live, err := h.dyn.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
			if err != nil || live.GetDeletionTimestamp() == nil {
				break
			}
		}
	}
}

func hasSecret(r map[string]spec) bool {
	for k := range r {
		if strings.HasPrefix(k, "secret/") {
			return true
		}
	}
	return false
}

func sameRender(a, b map[string]spec) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// settle updates what must hold after the renders went from before to
// w.render on the cluster: keys left by every app are released (kept)
// or gone; keys rendered for the first time are the apps' own, or
// adopted when someone else's object was there.
func (w *world) settle(before map[string]map[string]spec) {
	for a, r := range before {
		var left = map[string]spec{}
		for k, sp := range r {
			if w.owner(k) == "" {
				left[k] = sp
			}
		}
		w.leave(a, left)
	}
	for _, a := range w.apps {
		for k, sp := range w.render[a] {
			if _, foreign := w.foreign[k]; !foreign && !w.released[k] {
				w.ours[k] = true
			}
			delete(w.pristine, k)
			delete(w.labelled, k)
			w.applied[k] = sp
		}
	}
}

// leave is an app letting go of keys: released when adopted or marked
// prune: disabled, else deleted.
func (w *world) leave(app string, keys map[string]spec) {
	for k := range keys {
		if w.applied[k].keep || !w.ours[k] {
			w.released[k] = true
		}
		delete(w.ours, k)
		delete(w.uids, k)
	}
}

// recordUIDs notes the uids of what the apps render (those applied).
func (h *hunter) recordUIDs(ctx context.Context, w *world, applied ...string) error {
	for _, a := range w.apps {
		if len(applied) > 0 && !slices.Contains(applied, a) {
			continue // not applied: what drifted away is still away
		}
		for key := range w.render[a] {
			gvr, ns, name := w.ref(key)
			live, err := h.dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("%s (app %s), rendered, is not there: %v", key, a, err)
			}
			w.uids[key] = live.GetUID()
			if strings.HasPrefix(key, "cm") {
				if v, _, _ := unstructured.NestedString(live.Object, "data", "v"); v != w.render[a][key].data {
					return fmt.Errorf("%s (app %s) holds %q, the render %q", key, a, v, w.render[a][key].data)
				}
			}
		}
	}
	return nil
}

func (h *hunter) exists(ctx context.Context, w *world, key string) bool {
	gvr, ns, name := w.ref(key)
	_, err := h.dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	return err == nil
}

func (h *hunter) foreignCreate(ctx context.Context, w *world, key string, data map[string]any, labels map[string]string) error {
	gvr, ns, name := w.ref(key)
	obj := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": name, "namespace": ns}}}
	kind, _, _ := strings.Cut(key, "/")
	switch gvr.Resource {
	case "hunts":
		obj.SetAPIVersion(w.group() + "/v1")
		obj.SetKind("Hunt")
		obj.Object["spec"] = data
	case "secrets":
		obj.SetAPIVersion("v1")
		obj.SetKind("Secret")
		obj.Object["stringData"] = data
	case "serviceaccounts":
		obj.SetAPIVersion("v1")
		obj.SetKind("ServiceAccount")
	case "roles":
		obj.SetAPIVersion("rbac.authorization.k8s.io/v1")
		obj.SetKind("Role")
		obj.Object["rules"] = []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"configmaps"}, "verbs": []any{"get"}}}
	default:
		obj.SetAPIVersion("v1")
		obj.SetKind("ConfigMap")
		obj.Object["data"] = data
	}
	switch kind {
	case "fown2":
		one, err := h.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Get(ctx, w.ns("one"), metav1.GetOptions{})
		if err != nil {
			return err
		}
		obj.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "Namespace", Name: one.GetName(), UID: one.GetUID()}})
	case "fgone2":
		obj.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: w.p + "-gone", UID: types.UID("00000000-0000-4000-8000-" + fmt.Sprintf("%012d", w.n))}})
	}
	if labels != nil {
		obj.SetLabels(labels)
	}
	live, err := h.dyn.Resource(gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{FieldManager: "someone-else"})
	if err != nil {
		return fmt.Errorf("the foreign actor could not create %s: %w", key, err)
	}
	if kind == "fgone2" {
		return nil // garbage: anyone may take it
	}
	w.foreign[key], w.released[key] = live.GetUID(), true
	if v, ok := data["v"].(string); ok && (gvr.Resource == "configmaps" || gvr.Resource == "hunts") {
		w.pristine[key] = v
	}
	return nil
}

// check holds the invariants that hold after every step.
func (h *hunter) check(ctx context.Context, w *world) error {
	if err := h.rendered(ctx, w); err != nil {
		return err
	}
	if app := w.owner("ep/e0"); app != "" && !h.canHold(ctx, w, "ep/e0") {
		return fmt.Errorf("ep/e0, rendered by app %s, has no Namespace to go to: ns/two is gone or being deleted", app)
	}
	return h.kept(ctx, w)
}

// rendered: what the apps render stays as the last apply left it, the
// same object (uid), holding the render.
func (h *hunter) rendered(ctx context.Context, w *world) error { return h.same(ctx, w, true) }

// same: what the apps render is the object the last apply left (uid),
// holding the render when content.
func (h *hunter) same(ctx context.Context, w *world, content bool) error {
	for key, uid := range w.uids {
		app := w.owner(key)
		if app == "" {
			continue
		}
		gvr, ns, name := w.ref(key)
		live, err := h.dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err != nil:
			return fmt.Errorf("%s, rendered by app %s, is gone: %v", key, app, err)
		case live.GetUID() != uid:
			return fmt.Errorf("%s, rendered by app %s, was re-created (uid %s, was %s)", key, app, live.GetUID(), uid)
		}
		if v, _, _ := unstructured.NestedString(live.Object, "data", "v"); content && strings.HasPrefix(key, "cm") && v != w.render[app][key].data {
			return fmt.Errorf("%s, rendered by app %s, holds %q, not its render's %q", key, app, v, w.render[app][key].data)
		}
	}
	return nil
}

// kept: what no app owns and must stay (the foreign actor's, released)
// is there, the foreign actor's unchanged while no app renders it; what
// an app created and no app renders any more is gone.
func (h *hunter) kept(ctx context.Context, w *world) error {
	if err := h.untouched(ctx, w); err != nil {
		return err
	}
	return h.pruned(ctx, w)
}

// untouched: what no app owns and must stay (the foreign actor's,
// released) is there, the foreign actor's unchanged while no app renders
// it. It holds even after a run that did not finish.
func (h *hunter) untouched(ctx context.Context, w *world) error {
	keys := []string{"ns/one"}
	for k := range w.released {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	// An object whose Namespace is being deleted goes with it, once the
	// namespace controller gets to it: it is lost already.
	terminating := map[string]bool{}
	for _, ns := range []string{w.ns("one"), w.ns("two")} {
		live, err := h.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Get(ctx, ns, metav1.GetOptions{})
		terminating[ns] = err == nil && live.GetDeletionTimestamp() != nil
	}
	for _, key := range keys {
		gvr, ns, name := w.ref(key)
		live, err := h.dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil && live.GetDeletionTimestamp() != nil:
			err = fmt.Errorf("being deleted")
		case err == nil && terminating[ns]:
			err = fmt.Errorf("its Namespace %s is being deleted", ns)
		}
		if err != nil {
			who := "released (adopted or prune: disabled)"
			if _, ok := w.foreign[key]; ok {
				who = "the foreign actor's"
			}
			return fmt.Errorf("%s, %s, is gone: %v", key, who, err)
		}
		if uid, ok := w.foreign[key]; ok && w.owner(key) == "" && live.GetUID() != uid {
			return fmt.Errorf("%s, the foreign actor's, was re-created (uid %s, was %s)", key, live.GetUID(), uid)
		}
		if v, ok := w.pristine[key]; ok && w.owner(key) == "" {
			if got := liveValue(key, live); got != v {
				return fmt.Errorf("%s, the foreign actor's, rendered by no app, was changed: %q, was %q", key, got, v)
			}
		}
	}
	return nil
}

// pruned: what an app created and no app renders any more is gone.
func (h *hunter) pruned(ctx context.Context, w *world) error {
	for _, a := range []string{"cm", "secret", "ep"} {
		for _, key := range huntKeys {
			if !strings.HasPrefix(key, a+"/") || w.owner(key) != "" || w.released[key] || w.everRendered(key) == false {
				continue
			}
			if h.exists(ctx, w, key) {
				return fmt.Errorf("%s, created by an app that no longer renders it, was not pruned", key)
			}
		}
	}
	return nil
}

func (w *world) everRendered(key string) bool { _, ok := w.applied[key]; return ok }

// secretValues are the values of the Secrets the apps render.
func (w *world) secretValues() map[string]bool {
	out := map[string]bool{}
	for _, a := range w.apps {
		for k, sp := range w.render[a] {
			if strings.HasPrefix(k, "secret/") {
				out["hunt-secret-"+sp.data] = true
			}
		}
	}
	return out
}

// learnSecrets adds the values of the Secrets the apps render to those
// no output may hold.
func (w *world) learnSecrets() {
	for k := range w.secretValues() {
		w.secrets = append(w.secrets, k)
	}
}

// secretFree fails when out holds a Secret value, plain or in base64.
func (w *world) secretFree(out string) error {
	for _, v := range w.secrets {
		if strings.Contains(out, v) || strings.Contains(out, base64.StdEncoding.EncodeToString([]byte(v))) {
			return fmt.Errorf("a Secret value is in the output:\n%s", out)
		}
	}
	return nil
}

// kindOf is the kind of a violation: the shortest sequence found must
// break the same invariant.
func kindOf(err error) string {
	msg := err.Error()
	for _, k := range []string{"is gone", "re-created", "was changed", "not its render", "not pruned", "no Namespace to go to", "Secret value", "at once", "lost its lease", "still runs", "rollback", "delete:", "tests failed", "not for a conflict", "nothing of anyone else's", "apply:", "apply (restricted"} {
		if strings.Contains(msg, k) {
			return k
		}
	}
	return msg
}

// shrink looks for a shorter sequence that still fails: chunks of steps
// left out, halving the chunk, each try on fresh names (at most 40 tries
// or 10 minutes).
func (h *hunter) shrink(seed uint64, seq []step, kind string) []step {
	deadline := time.Now().Add(10 * time.Minute)
	tries := 0
	for chunk := len(seq) / 2; chunk >= 1; chunk /= 2 {
		for i := 0; i+chunk <= len(seq); {
			if tries >= 40 || time.Now().After(deadline) {
				return seq
			}
			tries++
			try := slices.Concat(seq[:i], seq[i+chunk:])
			if done, v := h.run(seed, len(try), try); v != nil && kindOf(v) == kind {
				seq = done
				continue
			}
			i += chunk
		}
	}
	return seq
}
