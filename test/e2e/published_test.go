package e2e

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/internal/registrytest"
	"github.com/kubectl-fleet/kubectl-fleet/internal/sopstest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/approval"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/digest"
	artifact "github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/target/registry"
)

// publishedFleet is staging written to directly, production delivered
// through the registry at host: pub-a and pub-c followed by Flux on
// fleet-c3 and fleet-c2 and read through their contexts, pub-b with no
// context at all.
func publishedFleet(host, prodAttrs string) string {
	return publishedFleetWith(host, prodAttrs, "", "")
}

// publishedFleetWith adds groups and clusters to it.
func publishedFleetWith(host, prodAttrs, groups, clusters string) string {
	return `apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: e2e}
defaults:
  attributes: {v: "1"}
groups:
  - name: staging
    verify:
      - {name: smoke, command: [./smoke.sh], timeout: 30s}
  - name: production
    attributes: {` + prodAttrs + `}
    delivery: {oci: "oci://` + host + `/fleets/e2e", insecure: true, namespace: flux-pub, interval: 1s, timeout: 30s, signing: {key: cosign.key}}
` + groups + `clusters:
  - {name: pub-stg, group: staging, context: fleet-c1}
  - {name: pub-a, group: production, context: fleet-c3}
  - {name: pub-b, group: production}
  - {name: pub-c, group: production, context: fleet-c2}
` + clusters + `apps:
  - {name: web, manifests: app.yaml}
`
}

const publishedApp = `apiVersion: v1
kind: Namespace
metadata: {name: e2e-pub}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: release, namespace: "${ns:=e2e-pub}"}
data: {v: "${v}"}
`

// TestPublishedRollout is a mixed fleet's rollout through the engine:
// staging applied directly, production published to a registry on
// loopback and applied by Flux's own controllers on fleet-c3. A staging
// check that fails leaves production's tags where they were; once it
// passes, the tags move, the rollout reads back that Flux applied
// exactly the published digest, and a cluster no context reads is said
// to be published, not observed. A Secret is never published, and
// nothing is applied anywhere then. With --atomic, an artifact Flux
// cannot apply has its tag moved back. Nothing the plugin keeps
// (records, locks) is written to a delivered cluster.
func TestPublishedRollout(t *testing.T) {
	b := newPubBed(t)
	b.bootstrap()
	b.stagingHoldsProduction()
	first := b.firstRelease()
	b.reconcileKeeps(first)
	b.forgedTagRefused()
	b.copiedSignatureUndone(first)
	d := b.diffAndPlan(first)
	b.dryRun(d)
	b.secretRefused(d)
	b.atomicMovesBack(d)
	b.historyAndRollback(first)
	b.laterGroupHeld()
	b.approvalVouches()
	b.pauseHolds()
	b.readOnlyReach()
	b.deleteAll()
}

// pubBed is TestPublishedRollout's world: Flux on fleet-c3, the
// registry, and the work folder of the fleet file.
type pubBed struct {
	t         *testing.T
	flux      fluxProcs // pub-a's; pub-c's is started beside it
	r         artifact.Registry
	host, dir string
	// pushed are the digests of web's artifacts pushed, as the registry
	// saw them: what anyone with push (or pull) rights can list.
	mu     sync.Mutex
	pushed []string
}

func newPubBed(t *testing.T) *pubBed {
	b := &pubBed{t: t, flux: startFlux(t, "fleet-c3")}
	startFlux(t, "fleet-c2")
	b.r, b.host = loopbackRegistry(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if ref, ok := strings.CutPrefix(r.URL.Path, "/v2/fleets/e2e/web/manifests/"); ok && r.Method == http.MethodPut && strings.HasPrefix(ref, "sha256:") {
				b.mu.Lock()
				b.pushed = append(b.pushed, ref)
				b.mu.Unlock()
			}
			next.ServeHTTP(w, r)
		})
	})
	b.dir = workdir(t, publishedFleet(b.host, ""), map[string]string{"app.yaml": publishedApp, "smoke.sh": smokeCheck, "fail": "", "cosign.key": signingKey(t)})
	if err := os.Chmod(filepath.Join(b.dir, "smoke.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _, _ = fleet(t, b.dir, "delete", "--yes", "-g", "staging") })
	t.Cleanup(func() {
		for _, c := range []string{"fleet-c3", "fleet-c2"} {
			kubectl(t, "", "--context", c, "delete", "namespace", "flux-pub", "e2e-pub", "--wait=false", "--ignore-not-found")
		}
	})
	return b
}

// tag is what pub-a's tag of web points at, "" for no tag.
func (b *pubBed) tag() string {
	b.t.Helper()
	d, found, err := b.r.Resolve(context.Background(), "web", "pub-a")
	if err != nil {
		b.t.Fatal(err)
	}
	if !found {
		return ""
	}
	return d.String()
}

// What makes pub-a and pub-c follow their tags, applied with admin
// credentials the plugin never holds; several clusters need a folder.
func (b *pubBed) bootstrap() {
	t, dir := b.t, b.dir
	if out, errOut, code := fleet(t, dir, "bootstrap", "-g", "production"); code != 1 || !strings.Contains(errOut, "3 delivered clusters selected: give --output-dir") {
		t.Fatalf("bootstrap of three clusters to standard output: exit %d\n%s%s", code, out, errOut)
	}
	follow, errOut, code := fleet(t, dir, "bootstrap", "-c", "pub-a")
	if code != 0 || !strings.Contains(follow, "cosign.pub: |") || strings.Contains(follow, "PRIVATE KEY") {
		t.Fatalf("bootstrap: exit %d\n%s%s", code, follow, errOut)
	}
	out := filepath.Join(t.TempDir(), "flux")
	if _, errOut, code := fleet(t, dir, "bootstrap", "-g", "production", "--output-dir", out); code != 0 {
		t.Fatalf("bootstrap --output-dir: exit %d\n%s", code, errOut)
	}
	for cluster, context := range map[string]string{"pub-a": "fleet-c3", "pub-c": "fleet-c2"} {
		data, err := os.ReadFile(filepath.Join(out, cluster+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if cluster == "pub-a" && string(data) != follow {
			t.Fatalf("bootstrap writes pub-a differently to a folder:\n%s\nthan to standard output:\n%s", data, follow)
		}
		if out, errOut, code := kubectl(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: flux-pub}\n---\n"+string(data), "--context", context, "apply", "-f", "-"); code != 0 {
			t.Fatalf("bootstrapping %s: exit %d\n%s%s", cluster, code, out, errOut)
		}
	}
}

// A staging check fails: production's tags never move.
func (b *pubBed) stagingHoldsProduction() {
	t, dir := b.t, b.dir
	out, errOut, code := fleet(t, dir, "apply", "--yes")
	if code != 1 || !strings.Contains(out, "[pub-a]   not started: staging failed") || strings.Contains(out, "published") {
		t.Fatalf("apply with staging failing: exit %d\n%s%s", code, out, errOut)
	}
	if d := b.tag(); d != "" {
		t.Fatalf("a tag moved although staging failed: web:pub-a is %s", d)
	}
	b.failedReleaseRefused()
}

// Someone with push rights moves pub-a's tag to what the run pushed
// although staging failed: nothing signed it (signing waits for the
// wave), so Flux refuses it.
func (b *pubBed) failedReleaseRefused() {
	t, ctx := b.t, context.Background()
	b.mu.Lock()
	pushed := slices.Clone(b.pushed)
	b.mu.Unlock()
	if len(pushed) == 0 {
		t.Fatal("the run pushed no artifact of web: nothing to attack with")
	}
	for _, d := range pushed {
		h, err := v1.NewHash(d)
		if err != nil {
			t.Fatal(err)
		}
		if sigs, err := b.r.Signatures(ctx, "web", h); err != nil || len(sigs) > 0 {
			t.Fatalf("artifact %s, pushed by a run whose staging failed, has %d signatures (%v)", d, len(sigs), err)
		}
	}
	h, _ := v1.NewHash(pushed[0])
	if err := b.r.Tag(ctx, "web", "pub-a", h); err != nil {
		t.Fatal(err)
	}
	b.fluxRefuses("a release whose staging failed")
	if err := b.r.Untag(ctx, "web", "pub-a"); err != nil {
		t.Fatal(err)
	}
}

// fluxRefuses waits until pub-a's Flux refuses its tag's artifact for
// want of a signature, and checks that the cluster runs nothing new.
func (b *pubBed) fluxRefuses(what string) {
	t := b.t
	var msg string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) && !strings.Contains(msg, "no matching signatures"); time.Sleep(500 * time.Millisecond) {
		msg, _, _ = kubectl(t, "", "--context", "fleet-c3", "-n", "flux-pub", "get", "ocirepository", "e2e-web", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].message}`)
	}
	if !strings.Contains(msg, "no matching signatures") {
		t.Fatalf("Flux took %s: %q\n%s", what, msg, b.flux.logs())
	}
}

// It passes: pub-a's tag moves, and Flux applies that digest.
func (b *pubBed) firstRelease() string {
	t, dir, host := b.t, b.dir, b.host
	var (
		out, errOut string
		code        int
	)
	if err := os.Remove(filepath.Join(dir, "fail")); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = fleet(t, dir, "apply", "--yes")
	d1 := b.tag()
	for _, want := range [][2]string{
		{"pub-a", "published oci://" + host + "/fleets/e2e/web:pub-a " + short(d1)},
		{"pub-a", "Flux applied " + short(d1) + ", Ready (healthy) since "},
		{"pub-a", "revision 1 recorded"},
		{"pub-a", "revision 1 (" + short(d1) + ") verified"},
		{"pub-a", "published web " + short(d1) + "; Flux applied web"},
		{"pub-b", "published oci://" + host + "/fleets/e2e/web:pub-b " + short(d1)},
		{"pub-b", "revision 1 (" + short(d1) + ") unverified: published, not observed: no context reads cluster pub-b"},
		{"pub-c", "Flux applied " + short(d1) + ", Ready (healthy) since "},
		{"pub-c", "revision 1 (" + short(d1) + ") verified"},
	} {
		if code != 0 || d1 == "" || !said(out, want[0], want[1]) {
			t.Fatalf("apply: exit %d, want [%s] %q\n%s%s\n%s", code, want[0], want[1], out, errOut, b.flux.logs())
		}
	}
	for _, c := range []string{"fleet-c3", "fleet-c2"} {
		if v, _, _ := kubectl(t, "", "--context", c, "-n", "e2e-pub", "get", "configmap", "release", "-o", "jsonpath={.data.v}"); v != "1" {
			t.Fatalf("Flux on %s applied %q, want 1", c, v)
		}
	}
	// The app's inventory, lock, revisions: none of them on pub-a.
	if objs, _, _ := kubectl(t, "", "--context", "fleet-c3", "-n", "kubectl-fleet", "get", "configmaps,leases,secrets", "-o", "name"); strings.Contains(objs, "/fleet-web") {
		t.Fatalf("the plugin wrote to a delivered cluster:\n%s", objs)
	}
	// status reads the registry, and Flux and the objects' health
	// through a context that only reads.
	out, errOut, code = fleet(t, dir, "status", "-g", "production")
	if !strings.Contains(out, "pub-b     production   published "+short(d1)+", not observed (r1 unverified)") || !strings.Contains(out, "pub-a     production   2 of 2 Current (r1 verified)") {
		t.Fatalf("status of delivered clusters: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, _ = fleet(t, dir, "status", "-c", "pub-a", "-o", "json")
	if !strings.Contains(out, `"published":{"repository":"oci://`+host+`/fleets/e2e/web","tag":"pub-a","artifact":"`+d1+`","current":"`+d1+`","flux":{"fetched":"pub-a@`+d1+`","applied":"pub-a@`+d1+`"`) {
		t.Fatalf("status -o json of a delivered cluster:\n%s%s", out, errOut)
	}
	if v, _, _ := kubectl(t, "", "--context", "fleet-c3", "-n", "flux-pub", "get", "ocirepository", "e2e-web", "-o", `jsonpath={.status.conditions[?(@.type=="SourceVerified")].status}`); v != "True" {
		t.Fatalf("Flux did not verify the signature: SourceVerified %q\n%s", v, b.flux.logs())
	}
	return d1
}

// A reconcile pass over delivered clusters whose renders did not change
// moves no tag and records no revision: Flux is already there.
func (b *pubBed) reconcileKeeps(first string) {
	t, dir := b.t, b.dir
	out, errOut, code := fleet(t, dir, "reconcile", "--once", "--yes")
	if code != 0 || !said(out, "pub-a", "unchanged, skipped (web r1)") || !said(out, "pub-b", "unchanged, skipped (web r1)") || strings.Contains(out, "publish") || b.tag() != first || mustDigest(t, b.r, "pub-c").String() != first {
		t.Fatalf("reconcile --once over unchanged delivered clusters: exit %d, pub-a at %s (was %s)\n%s%s", code, b.tag(), first, out, errOut)
	}
	// Someone moved pub-b's tag: the history's r1 no longer counts, and
	// the pass moves the tag back to r1's artifact, recording nothing new.
	ctx := context.Background()
	img, err := artifact.Pack(nil, artifact.Origin{Revision: "by hand"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := b.r.Push(ctx, "web", img)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.r.Tag(ctx, "web", "pub-b", other); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = fleet(t, dir, "reconcile", "--once", "--yes")
	if code != 0 || !said(out, "pub-b", "web: no revision recorded") || !said(out, "pub-b", "revision 1 is current") || !said(out, "pub-a", "unchanged, skipped") || mustDigest(t, b.r, "pub-b").String() != first {
		t.Fatalf("reconcile --once after pub-b's tag moved: exit %d\n%s%s", code, out, errOut)
	}
}

// Someone with push rights and no key moves the tag: Flux refuses.
func (b *pubBed) forgedTagRefused() {
	t, r, ctx := b.t, b.r, context.Background()
	forged, err := artifact.Pack(nil, artifact.Origin{Revision: "forged"})
	if err != nil {
		t.Fatal(err)
	}
	fd, err := r.Push(ctx, "web", forged)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Tag(ctx, "web", "pub-a", fd); err != nil {
		t.Fatal(err)
	}
	b.fluxRefuses("an unsigned artifact")
	if v, _, _ := kubectl(t, "", "--context", "fleet-c3", "-n", "e2e-pub", "get", "configmap", "release", "-o", "jsonpath={.data.v}"); v != "1" {
		t.Fatalf("after a forged tag the cluster runs %q", v)
	}
	if err := r.Tag(ctx, "web", "pub-a", mustDigest(t, r, "pub-b")); err != nil {
		t.Fatal(err)
	}
}

// Someone with push rights copies the signature manifest of a signed
// artifact onto their own and moves pub-a's tag to it. Flux v1.9.6
// checks the signature, not that its payload names the artifact, and
// applies it (docs/security.md); status names the moved tag and exits
// 1, and a reconcile pass moves the tag back, which Flux applies.
func (b *pubBed) copiedSignatureUndone(first string) {
	t, dir, r, ctx := b.t, b.dir, b.r, context.Background()
	objs := []*unstructured.Unstructured{ // the app's own objects, but v (its Namespace kept: an API server alone never ends a Namespace)
		{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "e2e-pub"}}},
		{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "release", "namespace": "e2e-pub"}, "data": map[string]any{"v": "copied"}}},
	}
	img, err := artifact.Pack(objs, artifact.Origin{})
	if err != nil {
		t.Fatal(err)
	}
	evil, err := r.Push(ctx, "web", img)
	if err != nil {
		t.Fatal(err)
	}
	good, err := v1.NewHash(first)
	if err != nil {
		t.Fatal(err)
	}
	repo, _ := r.Repository("web")
	sig, err := remote.Image(repo.Tag(artifact.SignatureTag(good)), remote.WithAuthFromKeychain(r.Keychain))
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(repo.Tag(artifact.SignatureTag(evil)), sig, remote.WithAuthFromKeychain(r.Keychain)); err != nil {
		t.Fatal(err)
	}
	if err := r.Tag(ctx, "web", "pub-a", evil); err != nil {
		t.Fatal(err)
	}
	runs := func(want string) bool {
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
			if v, _, _ := kubectl(t, "", "--context", "fleet-c3", "-n", "e2e-pub", "get", "configmap", "release", "-o", "jsonpath={.data.v}"); v == want {
				return true
			}
		}
		return false
	}
	if !runs("copied") {
		t.Fatalf("Flux did not apply an artifact with a copied signature: a Flux that checks the payload's digest, which docs/security.md says v1.9.6 does not: update it\n%s", b.flux.logs())
	}
	out, errOut, code := fleet(t, dir, "status", "-c", "pub-a")
	if code != 1 || !strings.Contains(out, "tag moved to "+short(evil.String())+" by someone else, not the current revision's "+short(first)) {
		t.Fatalf("status after pub-a's tag was moved to an artifact with a copied signature: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = fleet(t, dir, "reconcile", "--once", "--yes", "-c", "pub-a")
	if code != 0 || b.tag() != first || !runs("1") {
		t.Fatalf("reconcile after a moved tag: exit %d, tag %s (want %s)\n%s%s\n%s", code, b.tag(), first, out, errOut, b.flux.logs())
	}
}

// diff compares a delivered cluster's render with the artifact its
// tag points at; a plan binds the render and where the tag was.
func (b *pubBed) diffAndPlan(d1 string) string {
	t, dir, host, r, ctx := b.t, b.dir, b.host, b.r, context.Background()
	var (
		out, errOut string
		code        int
	)
	if err := os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(publishedFleet(host, `v: "2"`)), 0o644); err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(dir, "plan.json")
	out, errOut, code = fleet(t, dir, "diff", "-g", "production", "--out", plan)
	if code != 1 || !said(out, "pub-b", `+  v: "2"`) || !said(out, "pub-b", "merged/pub-b/web/ConfigMap/e2e-pub/release") {
		t.Fatalf("diff of delivered clusters: exit %d\n%s%s", code, out, errOut)
	}
	img, err := artifact.Pack(nil, artifact.Origin{Revision: "another publisher"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := r.Push(ctx, "web", img)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Tag(ctx, "web", "pub-b", other); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = fleet(t, dir, "apply", "--yes", "-g", "production", "--plan", plan)
	// Each cluster is held to its own part of the plan, as when written
	// to directly: pub-a goes on.
	if code != 1 || !said(out, "pub-b", "the tag of app web moved since the plan (now "+other.String()) || !said(out, "pub-a", "Flux applied") || b.tag() == d1 {
		t.Fatalf("apply --plan after pub-b's tag moved: exit %d, pub-a at %s (was %s)\n%s%s", code, b.tag(), d1, out, errOut)
	}
	d1 = b.tag()
	if err := os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(publishedFleet(host, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	return d1
}

// A dry run says what would be published, and pushes nothing.
func (b *pubBed) dryRun(d1 string) {
	t, dir, host := b.t, b.dir, b.host
	var (
		out, errOut string
		code        int
	)
	if err := os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(publishedFleet(host, `v: "4"`)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = fleet(t, dir, "apply", "--dry-run=server", "-g", "production")
	if code != 0 || !said(out, "pub-a", "would publish oci://"+host+"/fleets/e2e/web:pub-a sha256:") || b.tag() != d1 {
		t.Fatalf("apply --dry-run of delivered clusters: exit %d, tag %s (was %s)\n%s%s", code, b.tag(), d1, out, errOut)
	}
	if err := os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(publishedFleet(host, "")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A Secret in the render: nothing is published, nothing applied.
func (b *pubBed) secretRefused(d1 string) {
	t, dir := b.t, b.dir
	var (
		out, errOut string
		code        int
	)
	secret := publishedApp + "---\napiVersion: v1\nkind: Secret\nmetadata: {name: token, namespace: e2e-pub}\nstringData: {token: s3cr3t-value}\n"
	if err := os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(strings.ReplaceAll(secret, "${v}", "2")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = fleet(t, dir, "apply", "--yes")
	if code == 0 || !strings.Contains(out+errOut, "app web renders Secret token") || strings.Contains(out+errOut, "s3cr3t-value") {
		t.Fatalf("apply of a Secret to a delivered cluster: exit %d\n%s%s", code, out, errOut)
	}
	if v, _, _ := kubectl(t, "", "--context", "fleet-c1", "-n", "e2e-pub", "get", "configmap", "release", "-o", "jsonpath={.data.v}"); v != "1" || b.tag() != d1 {
		t.Fatalf("a refused publish changed staging (%q) or moved the tag (%s, was %s)", v, b.tag(), d1)
	}

	// Nor a value decrypted from SOPS, in a ConfigMap or any form: the
	// render that read one is refused, before anything is pushed.
	k := sopstest.NewKey(t)
	plain := strings.ReplaceAll(publishedApp, "${v}", "2") + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: db, namespace: e2e-pub}\ndata: {dsn: \"postgres://app:s3cr3t-dsn@db/app\"}\n"
	if err := os.WriteFile(filepath.Join(dir, "app.yaml"), k.Encrypt(t, "app.yaml", plain, "^data$"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SOPS_AGE_KEY", k.Identity)
	b.mu.Lock()
	pushed := len(b.pushed)
	b.mu.Unlock()
	out, errOut, code = fleet(t, dir, "apply", "--yes")
	if code == 0 || !strings.Contains(out+errOut, "app web renders values decrypted with SOPS") || strings.Contains(out+errOut, "s3cr3t-dsn") {
		t.Fatalf("apply of a decrypted value to a delivered cluster: exit %d\n%s%s", code, out, errOut)
	}
	b.mu.Lock()
	after := len(b.pushed)
	b.mu.Unlock()
	if v, _, _ := kubectl(t, "", "--context", "fleet-c1", "-n", "e2e-pub", "get", "configmap", "release", "-o", "jsonpath={.data.v}"); v != "1" || b.tag() != d1 || after != pushed {
		t.Fatalf("a refused publish changed staging (%q), moved the tag (%s, was %s) or pushed (%d artifacts, were %d)", v, b.tag(), d1, after, pushed)
	}
}

// --atomic: an artifact Flux cannot apply has its tag moved back.
func (b *pubBed) atomicMovesBack(d1 string) {
	t, dir, host := b.t, b.dir, b.host
	var (
		out, errOut string
		code        int
	)
	if err := os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(publishedApp), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(publishedFleet(host, `ns: nowhere, v: "3"`)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = fleet(t, dir, "apply", "--yes", "--atomic", "--timeout", "20s")
	if code != 1 || !strings.Contains(out, "Flux failed to apply") || !strings.Contains(out, "tags moved back: web back to r2 ("+short(d1)) || b.tag() != d1 {
		t.Fatalf("apply --atomic of what Flux cannot apply: exit %d, tag %s (was %s)\n%s%s\n%s", code, b.tag(), d1, out, errOut, b.flux.logs())
	}
}

// The history is the registry's; rollback moves the tag back to the
// artifact of the revision before (--atomic made r2 current again).
func (b *pubBed) historyAndRollback(first string) {
	t, dir := b.t, b.dir
	var (
		out, errOut string
		code        int
	)
	out, errOut, code = fleet(t, dir, "history", "-c", "pub-a", "-o", "json")
	if code != 0 || strings.Count(out, `"artifact":"sha256:`) != 3 || !strings.Contains(out, `"current":true,"app":"web","revision":2`) {
		t.Fatalf("history of a delivered cluster: exit %d\n%s%s", code, out, errOut)
	}
	// Who published: the user pub-a's read-only context authenticates.
	if n := strings.Count(out, `"user":"admin"`); n != 3 {
		t.Errorf("history of an observed delivered cluster names its publisher %d times of 3:\n%s", n, out)
	}
	b.forgedHistoryRefused()
	out, errOut, code = fleet(t, dir, "rollback", "--yes", "-c", "pub-a")
	if code != 0 || !said(out, "pub-a", "revision 4 recorded (rollback to 1)") || b.tag() != first {
		t.Fatalf("rollback of a delivered cluster: exit %d, tag %s, want %s\n%s%s\n%s", code, b.tag(), first, out, errOut, b.flux.logs())
	}
	if v, _, _ := kubectl(t, "", "--context", "fleet-c3", "-n", "e2e-pub", "get", "configmap", "release", "-o", "jsonpath={.data.v}"); v != "1" {
		t.Fatalf("Flux runs %q after the rollback, want 1", v)
	}
}

// Someone with push rights edits pub-a's history before a rollback:
// revision 1 names their artifact (and its objects' digest), or another
// signed artifact of pub-a under revision 1's digest. The record is not
// signed by the delivery's key: rollback refuses both, naming it, and
// signs nothing; the tag stays. (Were it signed, the artifact's own
// signature and digest are checked too: TestChooseChecksTheArtifact,
// TestSignClaims.)
func (b *pubBed) forgedHistoryRefused() {
	t, dir, ctx := b.t, b.dir, context.Background()
	h, err := b.r.History(ctx, "web", "pub-a")
	if err != nil {
		t.Fatal(err)
	}
	before := b.tag()
	signed, _, err := b.r.Resolve(ctx, "web", "pub-a.history")
	if err != nil {
		t.Fatal(err)
	}
	objs := []*unstructured.Unstructured{{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "release", "namespace": "e2e-pub"}, "data": map[string]any{"v": "evil"}}}}
	img, err := artifact.Pack(objs, artifact.Origin{})
	if err != nil {
		t.Fatal(err)
	}
	evil, err := b.r.Push(ctx, "web", img)
	if err != nil {
		t.Fatal(err)
	}
	r1 := slices.IndexFunc(h.Revisions, func(r revision.Revision) bool { return r.Number == 1 })
	rCur, _ := h.Record()
	for _, forge := range []struct {
		artifact, digest, want string
	}{
		{evil.String(), digest.Render(objs, nil), "web:pub-a.history is not signed by the delivery's key"},
		{rCur.Artifact, h.Revisions[r1].Digest, "web:pub-a.history is not signed by the delivery's key"},
	} {
		forged := artifact.History{Current: h.Current, Revisions: slices.Clone(h.Revisions)}
		forged.Revisions[r1].Artifact, forged.Revisions[r1].Digest = forge.artifact, forge.digest
		if err := b.r.SaveHistory(ctx, "web", "pub-a", forged); err != nil {
			t.Fatal(err)
		}
		out, errOut, code := fleet(t, dir, "rollback", "--yes", "-c", "pub-a")
		if code == 0 || !strings.Contains(out+errOut, forge.want) || b.tag() != before {
			t.Fatalf("rollback after a forged history record: exit %d, tag %s (was %s), want %q\n%s%s", code, b.tag(), before, forge.want, out, errOut)
		}
		if sigs, err := b.r.Signatures(ctx, "web", evil); err != nil || len(sigs) != 0 {
			t.Fatalf("the forged record's artifact got %d signatures (%v)", len(sigs), err)
		}
	}
	if err := b.r.Tag(ctx, "web", "pub-a.history", signed); err != nil {
		t.Fatal(err)
	}
}

// A group after production reads its releases from the registry:
// pub-b, never observed, holds it.
func (b *pubBed) laterGroupHeld() {
	t, dir, host := b.t, b.dir, b.host
	var (
		out, errOut string
		code        int
	)
	if err := os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(publishedFleet(host, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := fleet(t, dir, "apply", "--yes", "-g", "production", "--history-limit", "1"); code != 0 || !said(out, "pub-a", "revision 4 is current") || !said(out, "pub-b", "revision 3 recorded") {
		t.Fatalf("apply -g production: exit %d\n%s%s", code, out, errOut)
	}
	// pub-b has no context: the local user published, said so.
	if out, errOut, code := fleet(t, dir, "history", "-c", "pub-b"); code != 0 || !strings.Contains(out, " (local user)") {
		t.Errorf("history of a delivered cluster no context reads: exit %d, want its publisher as the local user\n%s%s", code, out, errOut)
	}
	// The revisions the history dropped lose the tags that kept them.
	for tag, want := range map[string]bool{"pub-b.r1": false, "pub-b.r2": false, "pub-b.r3": true} {
		if _, found, err := b.r.Resolve(context.Background(), "web", tag); err != nil || found != want {
			t.Fatalf("web:%s there: %v (%v), want %v", tag, found, err, want)
		}
	}
	late := publishedFleetWith(host, "", "  - {name: late, attributes: {v: \"7\"}}\n", "  - {name: pub-late, group: late, context: fleet-c2}\n")
	if err := os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(late), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = fleet(t, dir, "apply", "--yes", "-g", "late")
	if code != 1 || !strings.Contains(out, "late not started: pub-b runs web r3, not verified (unverified: published, not observed") {
		t.Fatalf("apply -g late: exit %d\n%s%s", code, out, errOut)
	}
	if v, _, _ := kubectl(t, "", "--context", "fleet-c2", "-n", "e2e-pub", "get", "configmap", "release", "-o", "jsonpath={.data.v}"); v == "7" { // pub-c's Flux applies v 1 there
		t.Fatal("late got a release production did not verify")
	}
	// Someone with push rights writes pub-b's r3 as verified: the record
	// is not signed by the delivery's key, so it counts for nothing.
	b.forged("pub-b.history", func(ctx context.Context) error {
		h, err := b.r.History(ctx, "web", "pub-b")
		if err != nil {
			return err
		}
		h.Verify(h.Current, revision.Verification{State: revision.Verified})
		return b.r.SaveHistory(ctx, "web", "pub-b", h)
	}, func() {
		out, errOut, code := fleet(t, dir, "apply", "--yes", "-g", "late")
		if code != 1 || !strings.Contains(out+errOut, "web:pub-b.history is not signed by the delivery's key") || strings.Contains(out, "[pub-late]   published") {
			t.Fatalf("apply -g late after a forged verified: exit %d\n%s%s", code, out, errOut)
		}
	})
}

// forged writes a record of web (tag) with push rights alone, runs
// check, and puts the signed record back.
func (b *pubBed) forged(tag string, write func(ctx context.Context) error, check func()) {
	t, ctx := b.t, context.Background()
	orig, _, err := b.r.Resolve(ctx, "web", tag)
	if err != nil {
		t.Fatal(err)
	}
	if err := write(ctx); err != nil {
		t.Fatal(err)
	}
	check()
	if err := b.r.Tag(ctx, "web", tag, orig); err != nil {
		t.Fatal(err)
	}
}

// With an approval required, a person vouches for what no one
// observed: the approval of late's own render, kept in the registry
// (edge-1 is delivered and unobserved too), lets it go, until it
// expires. Where a context authenticates who publishes, that identity
// cannot approve its own release.
func (b *pubBed) approvalVouches() {
	t, dir, host := b.t, b.dir, b.host
	_, alicePEM, alicePub, err := approval.GenerateKey("alice")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alice.pem"), alicePEM, 0o600); err != nil {
		t.Fatal(err)
	}
	withApproval := func(late, production string) {
		t.Helper()
		approved := publishedFleetWith(host, "", "  - {name: late, approval: "+late+", delivery: {oci: \"oci://"+host+"/fleets/e2e\", insecure: true, signing: {key: cosign.key}}}\n", "  - {name: edge-1, group: late}\n")
		approved = strings.Replace(approved, "apps:\n", "approvers:\n  - {name: alice, publicKey: "+alicePub+"}\napps:\n", 1)
		approved = strings.Replace(approved, "  - name: production\n", "  - name: production\n    approval: "+production+"\n", 1)
		if err := os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(approved), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	approve := func(args ...string) {
		t.Helper()
		args = append([]string{"approve", "--key", filepath.Join(dir, "alice.pem")}, args...)
		if out, errOut, code := fleet(t, dir, args...); code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
	}
	withApproval("{required: true, expires: 1s}", "none")
	out, errOut, code := fleet(t, dir, "apply", "--yes", "-g", "late")
	if code != 4 || !strings.Contains(out, "late awaiting approval: edge-1: web sha256:") {
		t.Fatalf("apply -g late before its approval: exit %d\n%s%s", code, out, errOut)
	}
	approve("-g", "late")
	time.Sleep(2100 * time.Millisecond) // an approval dated to the second, expired
	out, errOut, code = fleet(t, dir, "apply", "--yes", "-g", "late")
	if code != 4 || !strings.Contains(out, "late awaiting approval: edge-1: web sha256:") || !strings.Contains(out, "approvals expire after 1s: approve it again") {
		t.Fatalf("apply -g late once its approval expired: exit %d\n%s%s", code, out, errOut)
	}
	withApproval("{required: true, expires: 1h}", "none")
	out, errOut, code = fleet(t, dir, "apply", "--yes", "-g", "late")
	if code != 0 || !said(out, "edge-1", "published oci://"+host+"/fleets/e2e/web:edge-1") {
		t.Fatalf("apply -g late once approved: exit %d\n%s%s", code, out, errOut)
	}

	// Not by who publishes: on a cluster whose context authenticates
	// someone (pub-a, pub-c), an approval given as the identity that
	// publishes holds the group; alice's, given as alice, does not.
	withApproval("required", "required")
	approve("-g", "production")
	out, errOut, code = fleet(t, dir, "apply", "--yes", "-g", "production")
	if code != 4 || !strings.Contains(out, ", who applies it: an approval needs someone else") || !strings.Contains(out, "pub-a: web sha256:") {
		t.Fatalf("apply -g production approved by who publishes: exit %d\n%s%s", code, out, errOut)
	}
	approve("-g", "production", "--as", "alice")
	out, errOut, code = fleet(t, dir, "apply", "--yes", "-g", "production")
	if code != 0 {
		t.Fatalf("apply -g production approved by alice: exit %d\n%s%s", code, out, errOut)
	}
	if err := os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(publishedFleet(host, "")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A pause of delivered clusters is kept in the registry: it stops their
// tags before they move, status says it, and resume lifts it.
func (b *pubBed) pauseHolds() {
	t, dir, host := b.t, b.dir, b.host
	before := map[string]v1.Hash{"pub-a": mustDigest(t, b.r, "pub-a"), "pub-b": mustDigest(t, b.r, "pub-b")}
	out, errOut, code := fleet(t, dir, "pause", "-g", "production", "--reason", "INC-9")
	if code != 0 || !said(out, "pub-b", "paused every app (by ") || !said(out, "pub-b", "(local user)") {
		t.Fatalf("pause of delivered clusters: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, _ := fleet(t, dir, "status", "-g", "production"); !strings.Contains(out+errOut, "pub-b paused") || !strings.Contains(out+errOut, "INC-9") {
		t.Fatalf("status does not say the pause kept in the registry:\n%s%s", out, errOut)
	}
	if err := os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(publishedFleet(host, "v: \"9\"")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = fleet(t, dir, "apply", "--yes", "-g", "production")
	if code == 0 || !said(out, "pub-a", "INC-9") || !said(out, "pub-b", "INC-9") {
		t.Fatalf("apply over paused delivered clusters: exit %d\n%s%s", code, out, errOut)
	}
	for c, d := range before {
		if now := mustDigest(t, b.r, c); now != d {
			t.Fatalf("%s is paused, yet its tag moved from %s to %s", c, d, now)
		}
	}
	// Someone with push rights writes {} over pub-a's pauses: a record
	// the key did not sign holds every app.
	ctx := context.Background()
	paused, _, err := b.r.Resolve(ctx, registry.PauseRepository, registry.PauseTag("pub-a"))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.r.WriteRecord(ctx, registry.PauseRepository, registry.PauseTag("pub-a"), map[string]string{}); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = fleet(t, dir, "apply", "--yes", "-c", "pub-a")
	if code == 0 || !said(out, "pub-a", "fleet.pauses:pub-a.pause is not signed by the delivery's key") || mustDigest(t, b.r, "pub-a") != before["pub-a"] {
		t.Fatalf("apply after {} was written over the pauses: exit %d\n%s%s", code, out, errOut)
	}
	if err := b.r.Tag(ctx, registry.PauseRepository, registry.PauseTag("pub-a"), paused); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = fleet(t, dir, "resume", "-g", "production")
	if code != 0 || !said(out, "pub-a", "resumed: was paused") {
		t.Fatalf("resume of delivered clusters: exit %d\n%s%s", code, out, errOut)
	}
	if err := os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(publishedFleet(host, "")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Nothing but Flux writes to a delivered cluster: exec reaches pub-a
// through the plugin, reads pass and a write is refused before it
// leaves, unless --allow-writes; a check there gets the same.
func (b *pubBed) readOnlyReach() {
	t, dir, host := b.t, b.dir, b.host
	out, errOut, code := fleet(t, dir, "exec", "-c", "pub-a", "--", "get", "configmap", "release", "-n", "e2e-pub", "-o", "name")
	if code != 0 || !strings.Contains(out, "[pub-a] configmap/release") {
		t.Fatalf("exec get on a delivered cluster: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = fleet(t, dir, "exec", "-c", "pub-a", "--", "create", "configmap", "exec-wrote", "-n", "e2e-pub")
	if code == 0 || !strings.Contains(errOut, "cluster pub-a is delivered through a registry: nothing writes to it but its Flux") || !absent(t, "fleet-c3", "-n", "e2e-pub", "configmap", "exec-wrote") {
		t.Fatalf("exec create on a delivered cluster: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = fleet(t, dir, "exec", "-c", "pub-a", "--allow-writes", "--", "create", "configmap", "exec-wrote", "-n", "default")
	if code != 0 || absent(t, "fleet-c3", "-n", "default", "configmap", "exec-wrote") {
		t.Fatalf("exec --allow-writes create on a delivered cluster: exit %d\n%s%s", code, out, errOut)
	}
	kubectl(t, "", "--context", "fleet-c3", "-n", "default", "delete", "configmap", "exec-wrote")

	// A check of a delivered cluster reads it, and cannot write.
	check := "#!/bin/sh\nkubectl get configmap release -n e2e-pub -o name && kubectl create configmap check-wrote -n e2e-pub\n"
	if err := os.WriteFile(filepath.Join(dir, "write.sh"), []byte(check), 0o755); err != nil {
		t.Fatal(err)
	}
	checked := strings.Replace(publishedFleet(host, ""), "  - name: production\n", "  - name: production\n    verify: [{name: write, command: [./write.sh], timeout: 30s}]\n", 1)
	if err := os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(checked), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = fleet(t, dir, "apply", "--yes", "-g", "production", "-c", "pub-a")
	if code == 0 || !said(out, "pub-a", "configmap/release") || !strings.Contains(out, "nothing writes to it but its Flux") || !absent(t, "fleet-c3", "-n", "e2e-pub", "configmap", "check-wrote") {
		t.Fatalf("a check that writes to a delivered cluster: exit %d\n%s%s", code, out, errOut)
	}
	if err := os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(publishedFleet(host, "")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// delete publishes the artifact of nothing; Flux prunes.
func (b *pubBed) deleteAll() {
	t, dir := b.t, b.dir
	var (
		out, errOut string
		code        int
	)
	out, errOut, code = fleet(t, dir, "delete", "--yes", "-g", "production")
	if code != 0 || !said(out, "pub-a", "published oci://") || !absent(t, "fleet-c3", "-n", "e2e-pub", "configmap", "release") || !absent(t, "fleet-c2", "-n", "e2e-pub", "configmap", "release") {
		t.Fatalf("delete of delivered clusters: exit %d\n%s%s\n%s", code, out, errOut, b.flux.logs())
	}
}

// mustDigest is what web's tag of cluster points at.
func mustDigest(t *testing.T, r artifact.Registry, cluster string) v1.Hash {
	t.Helper()
	d, found, err := r.Resolve(context.Background(), "web", cluster)
	if err != nil || !found {
		t.Fatalf("web:%s: %v %v", cluster, found, err)
	}
	return d
}

// signingKey is a new ECDSA P-256 key, PEM: what a delivery signs with.
func signingKey(t *testing.T) string { return string(registrytest.SigningKey(t)) }

// said reports whether out has a line of cluster's that holds text.
func said(out, cluster, text string) bool {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "["+cluster+"]") && strings.Contains(line, text) {
			return true
		}
	}
	return false
}

// short is a digest as the plugin says it.
func short(d string) string { return d[:min(len(d), 19)] }
