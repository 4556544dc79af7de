package e2e

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitRepo makes dir a git work tree and commits everything in it; it
// returns the commit.
func gitRepo(t *testing.T, dir, message string) string {
	t.Helper()
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=e2e", "-c", "user.email=e2e@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		git("init", "-q")
	}
	git("add", "-A")
	git("commit", "-q", "--allow-empty", "-m", message)
	return git("rev-parse", "HEAD")
}

// revisionApp is the app of the revision tests: a Namespace, a ConfigMap
// kept, one dropped in v2, and a Secret whose value changes.
func revisionApp(ns, password string, withDrop bool) string {
	s := namespaced(ns, `apiVersion: v1
kind: ConfigMap
metadata: {name: keep, namespace: `+ns+`}
data: {cluster: '${FLEET_CLUSTER_NAME}'}
---
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: `+ns+`}
stringData: {password: `+password+`}
`)
	if withDrop {
		s += "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: drop, namespace: " + ns + "}\ndata: {x: '1'}\n"
	}
	return s
}

// historyOf runs history -o json and returns the revisions, per cluster,
// as "number description objects source current"; its output goes to all.
func historyOf(t *testing.T, all *strings.Builder, dir string, args ...string) map[string][]string {
	t.Helper()
	out, errOut, code := fleet(t, dir, append([]string{"history", "-o", "json"}, args...)...)
	all.WriteString(out + errOut)
	if code != 0 {
		t.Fatalf("history: exit %d\n%s%s", code, out, errOut)
	}
	got := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var e struct {
			Cluster, App, Description, Digest, User string
			Revision, Objects                       int
			Current                                 bool
			Source                                  struct{ Commit string }
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if e.User != "admin" || !strings.HasPrefix(e.Digest, "sha256:") {
			t.Errorf("revision %d on %s: user %q, digest %q", e.Revision, e.Cluster, e.User, e.Digest)
		}
		c := e.Source.Commit
		if len(c) > 7 {
			c = c[:7]
		}
		cur := ""
		if e.Current {
			cur = " current"
		}
		got[e.Cluster] = append(got[e.Cluster], strings.TrimSpace(strings.Join([]string{itoa(e.Revision), e.Description, itoa(e.Objects), c}, " ")+cur))
	}
	return got
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// secretValue is the decoded password of the revision tests' Secret.
func secretValue(t *testing.T, context, ns string) string {
	t.Helper()
	v, code := get(t, context, "secret", "creds", "-n", ns, "-o", "jsonpath={.data.password}")
	if code != 0 {
		t.Fatalf("%s: no secret creds", context)
	}
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRevisionsHistoryRollback(t *testing.T) {
	const (
		ns        = "e2e-rev"
		markerOne = "zq-rev-marker-one"
		markerTwo = "zq-rev-marker-two"
	)
	contexts := []string{"fleet-c1", "fleet-c2", "fleet-c3"}
	dir := workdir(t, twoGroups, map[string]string{"web/all.yaml": revisionApp(ns, markerOne, true)})
	app := filepath.Join(dir, "web")
	var all strings.Builder // every output, searched for Secret values
	run := func(want int, args ...string) string {
		t.Helper()
		out, errOut, code := fleet(t, dir, args...)
		all.WriteString(out + errOut)
		if code != want {
			t.Fatalf("%s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out, errOut)
		}
		return out
	}
	one := gitRepo(t, dir, "v1")
	out := run(0, "apply", "-f", app, "--name", "rev-web", "--yes")
	if strings.Count(out, "revision 1 recorded") != 3 || !strings.Contains(out, "[stg]    applied: 4 created\n") {
		t.Fatalf("apply v1:\n%s", out)
	}

	// v2: a ConfigMap dropped, the Secret changed.
	if err := os.WriteFile(filepath.Join(app, "all.yaml"), []byte(revisionApp(ns, markerTwo, false)), 0o644); err != nil {
		t.Fatal(err)
	}
	two := gitRepo(t, dir, "v2")
	out = run(0, "apply", "-f", app, "--name", "rev-web", "--prune", "--yes")
	if strings.Count(out, "revision 2 recorded") != 3 || strings.Count(out, "configmap/drop pruned") != 3 {
		t.Fatalf("apply v2:\n%s", out)
	}
	// The same render again records nothing.
	out = run(0, "apply", "-f", app, "--name", "rev-web", "--prune", "--yes")
	if strings.Count(out, "revision 2 is current (the render has not changed)") != 3 {
		t.Errorf("re-apply:\n%s", out)
	}
	want := []string{"1 apply 4 " + one[:7], "2 apply 3 " + two[:7] + " current"}
	for cluster, got := range historyOf(t, &all, dir, "--app", "rev-web") {
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("history of %s: %q, want %q", cluster, got, want)
		}
	}
	out = run(0, "history", "--app", "rev-web")
	run(0, "history", "--app", "rev-web", "-o", "yaml")
	if !strings.Contains(out, "stg       rev-web   2 (current)") || !strings.Contains(out, one[:12]) {
		t.Errorf("history table:\n%s", out)
	}

	// Back to v1: the dropped object returns, the Secret's old value too,
	// on every cluster; the rollback is revision 3.
	out = run(0, "rollback", "--app", "rev-web", "--yes")
	if strings.Count(out, "revision 3 recorded (rollback to 1)") != 3 || strings.Count(out, "configmap/drop created") != 3 {
		t.Fatalf("rollback:\n%s", out)
	}
	for _, ctx := range contexts {
		if v := secretValue(t, ctx, ns); v != markerOne {
			t.Errorf("%s: password %q after the rollback to 1", ctx, v)
		}
		if _, code := get(t, ctx, "configmap", "drop", "-n", ns); code != 0 {
			t.Errorf("%s: configmap drop not restored", ctx)
		}
	}
	// --to-revision: forward again to 2, which prunes drop.
	out = run(0, "rollback", "--app", "rev-web", "--to-revision", "2", "--yes", "-c", "stg")
	if !strings.Contains(out, "revision 4 recorded (rollback to 2)") || !strings.Contains(out, "configmap/drop pruned") {
		t.Fatalf("rollback --to-revision 2:\n%s", out)
	}
	if v := secretValue(t, "fleet-c1", ns); v != markerTwo || !absent(t, "fleet-c1", "configmap", "drop", "-n", ns) {
		t.Errorf("stg after the rollback to 2: password %q", v)
	}
	// Version skew inside production is reported by status; -v names the
	// source commit.
	out = run(0, "rollback", "--app", "rev-web", "--to-revision", "1", "--yes", "-c", "prod-a", "--dry-run=server")
	if !strings.Contains(out, "(server dry run)") {
		t.Errorf("dry run:\n%s", out)
	}
	h := historyOf(t, &all, dir, "--app", "rev-web")
	if len(h["prod-a"]) != 3 || len(h["stg"]) != 4 {
		t.Errorf("a dry run recorded a revision: %q", h)
	}
	run(0, "apply", "-f", app, "--name", "rev-web", "--prune", "--yes", "-c", "prod-b")
	out = run(1, "status", "-f", app, "--name", "rev-web")
	if !strings.Contains(out, "Skew: app rev-web differs within group production: prod-a r3 ("+one[:12]+"), prod-b r4 ("+two[:12]+")") {
		t.Errorf("status shows no skew:\n%s", out)
	}
	out = run(1, "status", "-f", app, "--name", "rev-web", "-o", "json")
	if !strings.Contains(out, `{"type":"skew","group":"production","app":"rev-web","clusters":[{"cluster":"prod-a","revision":"r3 (`+one[:12]+`)"},{"cluster":"prod-b","revision":"r4 (`+two[:12]+`)"}]}`) {
		t.Errorf("status -o json shows no skew:\n%s", out)
	}
	out = run(0, "status", "-f", app, "--name", "rev-web", "-o", "wide", "-c", "prod-b")
	if !strings.Contains(out, "rev-web: 3 of 3 Current, revision 4 verified from "+two[:12]) {
		t.Errorf("status -v shows no source:\n%s", out)
	}

	// A stored revision, printed, Secrets masked.
	out = run(0, "render", "--revision", "1", "--app", "rev-web", "-c", "stg")
	if !strings.Contains(out, "name: drop") || !strings.Contains(out, "password: '***'") {
		t.Errorf("render --revision 1:\n%s", out)
	}
	if _, errOut, code := fleet(t, dir, "render", "--revision", "9", "--app", "rev-web", "-c", "stg"); code != 1 || !strings.Contains(errOut, "app rev-web has no revision 9 here") {
		t.Errorf("render --revision 9: exit %d: %s", code, errOut)
	}
	// A cluster without the revision is skipped, not guessed; the others
	// roll back.
	out = run(1, "rollback", "--app", "rev-web", "--to-revision", "4", "--yes")
	if !strings.Contains(out, "[stg]    revision 4 is current") || !strings.Contains(out, "[prod-a] skipped: app rev-web has no revision 4 here") || !strings.Contains(out, "[prod-b] revision 4 is current") {
		t.Errorf("rollback to a revision only some have:\n%s", out)
	}

	// --history-limit keeps the newest.
	if err := os.WriteFile(filepath.Join(app, "all.yaml"), []byte(revisionApp(ns, markerOne+"-3", false)), 0o644); err != nil {
		t.Fatal(err)
	}
	run(0, "apply", "-f", app, "--name", "rev-web", "--yes", "-c", "stg", "--history-limit", "2")
	if got := historyOf(t, &all, dir, "-c", "stg", "--app", "rev-web")["stg"]; len(got) != 2 || !strings.HasPrefix(got[0], "4 rollback to 2 3") || !strings.HasPrefix(got[1], "5 apply 3") {
		t.Errorf("history after --history-limit 2: %q", got)
	}
	if !absent(t, "fleet-c1", "secret", "fleet-rev-web.v3", "-n", "kubectl-fleet") {
		t.Error("revision 3 was kept past the limit")
	}

	// With no source and no apps, status reports what the clusters record.
	bare := workdir(t, twoGroups, map[string]string{})
	out, errOut, code := fleet(t, bare, "status", "--app", "rev-web")
	all.WriteString(out + errOut)
	if code != 0 || !strings.Contains(out, "REV-WEB") || !strings.Contains(out, "stg       staging      3 of 3 Current (r5") || !strings.Contains(out, "4 of 4 Current (r3") || !strings.Contains(out, "3 of 3 Current (r4") {
		t.Errorf("status from the inventory: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = fleet(t, bare, "status", "--verbose", "-c", "stg", "--app", "rev-web")
	all.WriteString(out + errOut)
	if code != 0 || !strings.Contains(out, "secret/creds Current") || !strings.Contains(out, "configmap/keep Current") {
		t.Errorf("status -v from the inventory: exit %d\n%s%s", code, out, errOut)
	}

	// Production is protected: no terminal, no --yes, nothing written.
	if out, errOut, code := fleet(t, dir, "rollback", "--app", "rev-web"); code != 1 || !strings.Contains(errOut, "group production is protected (prod-a, prod-b): pass --yes") {
		t.Errorf("rollback without --yes: exit %d\n%s%s", code, out, errOut)
	}
	if got := historyOf(t, &all, dir, "-c", "stg", "--app", "rev-web")["stg"]; len(got) != 2 {
		t.Errorf("a refused rollback wrote: %q", got)
	}
	out = run(0, "rollback", "--app", "rev-web", "-c", "stg", "--dry-run=server", "-o", "json")
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("rollback -o json: %v: %q", err, line)
		}
	}
	if !strings.Contains(out, `"type":"cluster","cluster":"stg","group":"staging","state":"succeeded"`) || !strings.Contains(out, `"dryRun":true`) {
		t.Errorf("rollback -o json:\n%s", out)
	}

	// Deleting the app deletes its history.
	run(0, "delete", "-f", app, "--name", "rev-web", "--yes", "-c", "prod-a")
	if got := historyOf(t, &all, dir, "-c", "prod-a", "--app", "rev-web")["prod-a"]; len(got) != 0 {
		t.Errorf("history after delete: %q", got)
	}

	for _, m := range []string{markerOne, markerTwo} {
		for _, enc := range []string{m, base64.StdEncoding.EncodeToString([]byte(m))} {
			if strings.Contains(all.String(), enc) {
				t.Errorf("a Secret value (%s) was printed", enc)
			}
		}
	}
}

// TestAtomic: a version the server rejects on staging rolls staging back
// to the objects it had and never reaches production; an app this apply
// installed is removed again.
func TestAtomic(t *testing.T) {
	const ns = "e2e-atomic"
	good := namespaced(ns, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: "+ns+"}\ndata: {v: one}\n")
	bad := namespaced(ns, `apiVersion: v1
kind: ConfigMap
metadata: {name: a, namespace: `+ns+`}
data: {v: two}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: b, namespace: `+ns+`}
---
apiVersion: v1
kind: Service
metadata: {name: broken, namespace: `+ns+`}
spec:
  ports: [{port: 0}]
`)
	dir := workdir(t, twoGroups, map[string]string{"v1/all.yaml": good, "v2/all.yaml": bad, "fresh/all.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fresh, namespace: " + ns + "}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: broken-too, namespace: " + ns + "}\nspec:\n  ports: [{port: 0}]\n"})
	if out, errOut, code := fleet(t, dir, "apply", "-f", filepath.Join(dir, "v1"), "--name", "atomic", "--yes"); code != 0 {
		t.Fatalf("apply v1: %s%s", out, errOut)
	}
	out, errOut, code := fleet(t, dir, "apply", "-f", filepath.Join(dir, "v2"), "--name", "atomic", "--yes", "--atomic", "--prune")
	if code != 1 || !strings.Contains(out, "[stg]    failed, rolled back to r1:") || !strings.Contains(out, "[prod-a] not started") {
		t.Fatalf("apply --atomic v2: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "atomic (rollback): configmap/b pruned") {
		t.Errorf("the rollback's work is not shown:\n%s", out)
	}
	// The failed apply's revision, stored while its objects were
	// applied, is gone: the history is v1's, restored.
	var all strings.Builder
	if got := historyOf(t, &all, dir, "--app", "atomic", "-c", "stg")["stg"]; len(got) != 1 || !strings.HasPrefix(got[0], "1 apply 2") || !strings.HasSuffix(got[0], " current") {
		t.Errorf("stg's history after the failed apply: %q\n%s", got, all.String())
	}
	for _, ctx := range []string{"fleet-c1", "fleet-c2", "fleet-c3"} {
		if v, _ := get(t, ctx, "configmap", "a", "-n", ns, "-o", "jsonpath={.data.v}"); v != "one" {
			t.Errorf("%s: configmap a has v=%q, want one", ctx, v)
		}
		if !absent(t, ctx, "configmap", "b", "-n", ns) {
			t.Errorf("%s: configmap b, created by the failed apply, is still there", ctx)
		}
	}
	// An app this apply would install is removed again.
	out, errOut, code = fleet(t, dir, "apply", "-f", filepath.Join(dir, "fresh"), "--name", "atomic-fresh", "--yes", "--atomic", "-c", "stg")
	if code != 1 || !strings.Contains(out, "[stg] failed, rolled back: atomic-fresh removed:") {
		t.Fatalf("apply --atomic of a new app: exit %d\n%s%s", code, out, errOut)
	}
	if !absent(t, "fleet-c1", "configmap", "fresh", "-n", ns) || !absent(t, "fleet-c1", "configmap", "fleet-atomic-fresh", "-n", "kubectl-fleet") {
		t.Error("the new app's objects or inventory survived its rollback")
	}
	// -o json says what the rollback did.
	out, _, _ = fleet(t, dir, "apply", "-f", filepath.Join(dir, "v2"), "--name", "atomic", "--yes", "--atomic", "-c", "stg", "-o", "json")
	if !strings.Contains(out, `"rollback":"rolled back to r1"`) {
		t.Errorf("json:\n%s", out)
	}
}

// TestAtomicSoak: a cluster that fails its group's soak is rolled back too.
func TestAtomicSoak(t *testing.T) {
	fleetYAML := strings.Replace(twoGroups, "  - {name: staging, maxParallel: 1}\n", "  - {name: staging, soak: 8s}\n", 1) + "apps:\n  - {name: soak-atomic, manifests: app.yaml}\n"
	v1 := namespaced("e2e-soak-atomic", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: steady, namespace: e2e-soak-atomic}\ndata: {v: one}\n")
	dir := workdir(t, fleetYAML, map[string]string{"app.yaml": v1})
	if out, errOut, code := fleet(t, dir, "apply", "--yes", "-c", "stg"); code != 0 {
		t.Fatalf("apply v1: %s%s", out, errOut)
	}
	if err := writeFile(dir, "app.yaml", strings.Replace(v1, "v: one", "v: two", 1)); err != nil {
		t.Fatal(err)
	}
	deleted := false
	out, errOut, code := fleetStreaming(t, dir, func(line string, _ *os.Process) {
		if !deleted && strings.Contains(line, "soak started") {
			if _, errOut, code := kubectl(t, "", "delete", "--context", "fleet-c1", "-n", "e2e-soak-atomic", "configmap", "steady"); code != 0 {
				t.Error(errOut)
			}
			deleted = true
		}
	}, "apply", "--yes", "--atomic")
	if !deleted || code != 1 || !strings.Contains(out, "[stg]    failed, rolled back to r1: ") || !strings.Contains(out, "soak: configmap/steady is gone") || !strings.Contains(out, "[prod-a] not started") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "[stg]    soak-atomic (rollback): revision 3 recorded (rollback to 1)") {
		t.Errorf("the rollback recorded no revision:\n%s", out)
	}
	if v, _ := get(t, "fleet-c1", "configmap", "steady", "-n", "e2e-soak-atomic", "-o", "jsonpath={.data.v}"); v != "one" {
		t.Errorf("after the rollback, v=%q, want one", v)
	}
	if !absent(t, "fleet-c2", "namespace", "e2e-soak-atomic") {
		t.Error("production was written although staging failed its soak")
	}
}

// TestRollbackWhereTheReleaseChangedNothing: a release that changed
// production only (staging's render was the same) is rolled back on
// production; staging has nothing to roll back, says so, and the
// rollback exits 0. --to-revision naming a revision a cluster does not
// have still fails there.
func TestRollbackWhereTheReleaseChangedNothing(t *testing.T) {
	const ns = "e2e-rollback-some"
	app := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: tier, namespace: " + ns + "}\ndata:\n  tier: ${tier}\n"
	fleetFile := func(prodTier string) string {
		f := strings.Replace(twoGroups, "{name: stg, group: staging, context: fleet-c1}", "{name: stg, group: staging, context: fleet-c1, attributes: {tier: silver}}", 1)
		f = strings.Replace(f, "{name: prod-a, group: production, context: fleet-c2}", "{name: prod-a, group: production, context: fleet-c2, attributes: {tier: "+prodTier+"}}", 1)
		f = strings.Replace(f, "{name: prod-b, group: production, context: fleet-c3}", "{name: prod-b, group: production, context: fleet-c3, attributes: {tier: "+prodTier+"}}", 1)
		return f + "apps:\n  - {name: tiers, manifests: app.yaml}\n"
	}
	dir := workdir(t, fleetFile("silver"), map[string]string{"app.yaml": namespaced(ns, app)})
	run := func(want int, args ...string) string {
		t.Helper()
		out, errOut, code := fleet(t, dir, args...)
		if code != want {
			t.Fatalf("%s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out, errOut)
		}
		return out
	}
	run(0, "apply", "--yes")
	if err := os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(fleetFile("gold")), 0o644); err != nil {
		t.Fatal(err)
	}
	out := run(0, "apply", "--yes")
	if !strings.Contains(out, "[stg]    revision 1 is current") || strings.Count(out, "revision 2 recorded") != 2 {
		t.Fatalf("the release changes production only:\n%s", out)
	}
	out = run(0, "rollback", "--app", "tiers", "--yes")
	if !strings.Contains(out, "[stg]    tiers: unchanged: nothing to roll back: app tiers has no revision before r1 here") || strings.Count(out, "revision 3 recorded (rollback to 1)") != 2 {
		t.Errorf("rollback:\n%s", out)
	}
	if sum := out[strings.Index(out, "Summary:"):]; !strings.Contains(sum, "nothing to roll back") || strings.Contains(sum, "skipped") {
		t.Errorf("the summary:\n%s", sum)
	}
	for _, ctx := range []string{"fleet-c2", "fleet-c3"} {
		if got, _ := get(t, ctx, "configmap", "tier", "-n", ns, "-o", "jsonpath={.data.tier}"); got != "silver" {
			t.Errorf("%s: tier %q after the rollback, want silver", ctx, got)
		}
	}
	out = run(1, "rollback", "--app", "tiers", "--to-revision", "3", "--yes")
	if !strings.Contains(out, "[stg]    skipped: app tiers has no revision 3 here") {
		t.Errorf("--to-revision a cluster does not have:\n%s", out)
	}
}
