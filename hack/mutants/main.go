// Command mutants plants the regressions the safety tests guard against,
// one at a time, and shows that the tests kill each: a safety test that
// cannot fail is no test. Each mutant is a one-line change of a rule
// (a guard that fails open, a check skipped); the tests that hold the
// rule run against it, and must fail. The file is restored after each,
// and on Ctrl-C. Usage, from the module's folder:
//
//	go run ./hack/mutants [-run REGEXP] [-e2e]
//
// -e2e adds the data-loss hunt on real API servers (TestHunt, make
// test's seeds) to each ownership mutant's tests: minutes each; -hunt
// runs the hunt alone against them, to see what it finds by itself. It
// exits 1 when a mutant survives. It edits the working tree while it
// runs: commit nothing until it is over.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strings"
	"time"
)

// mutant is one planted regression: old, found exactly once in file,
// becomes new; pkgs and run are the tests that must then fail.
type mutant struct {
	name, file, old, new string
	pkgs                 []string
	run                  string
	// hunt: the ownership rule's, which TestHunt also holds (-e2e).
	hunt bool
}

var mutants = []mutant{
	// The ownership rule (trust 3), as the review planted them.
	{"a guard that reads Forbidden as nothing there", "pkg/inventory/guard.go",
		"\tcase err != nil:\n\t\treturn d, fmt.Sprintf(\"not deleted: %s (%v)",
		"\tcase err != nil && !apierrors.IsForbidden(err):\n\t\treturn d, fmt.Sprintf(\"not deleted: %s (%v)",
		[]string{"./pkg/apply", "./pkg/inventory"}, "", true},
	{"a rule blind to the fleet", "pkg/inventory/inventory.go",
		"if fleet != \"\" && s.Exists && s.Fleet != \"\" && s.Fleet != fleet {",
		"if false && fleet != \"\" && s.Exists && s.Fleet != \"\" && s.Fleet != fleet {",
		[]string{"./pkg/inventory", "./pkg/apply", "./pkg/rollout"}, "", true},
	{"an adopted object deleted", "pkg/inventory/inventory.go",
		"adopted := s.Adopted.Has(path) && !object.PruneAlways(m)",
		"adopted := false && s.Adopted.Has(path) && !object.PruneAlways(m)",
		[]string{"./pkg/inventory", "./pkg/apply"}, "", true},
	{"a CRD deleted with others' custom resources", "pkg/inventory/guard.go",
		"if !g.dooms(item.GetUID()) {",
		"if false && !g.dooms(item.GetUID()) {",
		[]string{"./pkg/inventory", "./pkg/apply"}, "", true},
	{"a kept member not spared from its CRD's count", "pkg/inventory/prune.go",
		"\t\t\tp.guard.Spare(m)\n",
		"\t\t\t_ = m\n",
		[]string{"./pkg/inventory", "./pkg/apply"}, "", true},
	{"an object moved to another app deleted", "pkg/inventory/inventory.go",
		"if app := n.rendering[path]; app != \"\" {",
		"if app := n.rendering[path]; false && app != \"\" {",
		[]string{"./pkg/inventory", "./pkg/apply"}, "", true},
	{"a Namespace deleted with another app's objects", "pkg/inventory/inventory.go",
		"if apps := n.inNamespace[m.GetName()]; len(apps) > 0 {",
		"if apps := n.inNamespace[m.GetName()]; false && len(apps) > 0 {",
		[]string{"./pkg/inventory", "./pkg/apply"}, "", true},
	{"unknown neighbours read as none", "pkg/inventory/inventory.go",
		"\tif n.unknown != nil {\n\t\treturn Decision{Retain: true",
		"\tif false && n.unknown != nil {\n\t\treturn Decision{Retain: true",
		[]string{"./pkg/inventory", "./pkg/apply"}, "", true},

	// What a Namespace holds (issue 61): the kinds the guard lists, and
	// how it judges an object a cluster-scoped owner owns.
	{"a Namespace's Secrets not counted", "pkg/inventory/guard.go",
		"if gvr.Resource == \"events\" || gvr.Group == \"metrics.k8s.io\" {",
		"if gvr.Resource == \"events\" || gvr.Resource == \"secrets\" || gvr.Group == \"metrics.k8s.io\" {",
		[]string{"./pkg/inventory", "./pkg/apply"}, "", true},
	{"a Namespace's Roles not counted", "pkg/inventory/guard.go",
		"if gvr.Resource == \"events\" || gvr.Group == \"metrics.k8s.io\" {",
		"if gvr.Resource == \"events\" || gvr.Group == \"rbac.authorization.k8s.io\" || gvr.Group == \"metrics.k8s.io\" {",
		[]string{"./pkg/inventory", "./pkg/apply"}, "", true},
	{"every ServiceAccount taken for the cluster's own", "pkg/inventory/guard.go",
		"resource == \"serviceaccounts\" && name == \"default\"",
		"resource == \"serviceaccounts\"",
		[]string{"./pkg/inventory", "./pkg/apply"}, "", true},
	{"an object a live cluster-scoped owner owns taken for garbage", "pkg/inventory/guard.go",
		"\t\t} else {\n\t\t\tlive, err = ri.Get(ctx, o.Name, metav1.GetOptions{})\n\t\t}",
		"\t\t} else {\n\t\t\tcontinue\n\t\t}",
		[]string{"./pkg/inventory", "./pkg/apply"}, "", true},

	// Trust 4.
	{"a decrypted value masked in Secrets only", "pkg/mask/mask.go",
		"\tif whole {\n\t\treturn Masked, true\n\t}",
		"\tif false && whole {\n\t\treturn Masked, true\n\t}",
		[]string{"./pkg/mask", "./pkg/report"}, "", false},
	{"a file without its MAC read as plain", "pkg/sopsfile/sopsfile.go",
		"\t\treturn yamlMark.Match(data)\n",
		"\t\treturn yamlMark.Match(data) && bytes.Contains(data, []byte(\"mac:\"))\n",
		[]string{"./pkg/sopsfile"}, "", false},
	{"a schedule that never opens passes", "pkg/fleet/windows.go",
		"\tif s.Next(scheduleRef).IsZero() {",
		"\tif false {",
		[]string{"./pkg/fleet"}, "", false},
	{"a window's duration unbounded", "pkg/fleet/windows.go",
		"\tcase w.Duration > MaxWindowDuration:",
		"\tcase false:",
		[]string{"./pkg/fleet"}, "", false},
	{"a time zone inside a schedule", "pkg/fleet/windows.go",
		"\tcase len(f) > 0 && (strings.HasPrefix(f[0], \"CRON_TZ=\") || strings.HasPrefix(f[0], \"TZ=\")):",
		"\tcase false:",
		[]string{"./pkg/fleet"}, "", false},
	{"a batch selector that matches nothing", "pkg/fleet/validate.go",
		"if b.Selector == \"\" || b.Size != nil || b.Optional || e.has(bp+\".selector\") {",
		"if true || b.Selector == \"\" || b.Size != nil || b.Optional || e.has(bp+\".selector\") {",
		[]string{"./pkg/fleet"}, "", false},
	{"one API server in two entries", "pkg/kube/config.go",
		"\t\tcase f.SameCluster(c, other.c):",
		"\t\tcase true:",
		[]string{"./pkg/kube"}, "", false},
	{"a pause read once per app", "pkg/apply/apply.go",
		"\tif err := p.held.before(ctx); err != nil {\n\t\tch.Action, ch.Reason = change.Skipped",
		"\tif err := error(nil); err != nil {\n\t\tch.Action, ch.Reason = change.Skipped",
		[]string{"./pkg/apply"}, "", false},
	{"an identity asked before the render succeeded", "pkg/rendered/set.go",
		"\tresults, shed := pl.renderShedding(ctx, c.Engine, shed, c.Shedding)\n",
		"\tif c.Warm != nil {\n\t\tc.Warm(ctx, pl)\n\t}\n\tresults, shed := pl.renderShedding(ctx, c.Engine, shed, c.Shedding)\n",
		[]string{"./pkg/rendered"}, "", false},
	{"an approval no approver signed", "pkg/approval/approval.go",
		"\t\tcase ok && a.Digest == d && rules.verified(a) == \"\":",
		"\t\tcase false:",
		[]string{"./pkg/approval", "./pkg/rollout"}, "", false},
	{"an approval by who applies", "pkg/approval/approval.go",
		"\t\tcase ok && a.Digest == d && rules.Self != \"\" && a.By == rules.Self:",
		"\t\tcase false:",
		[]string{"./pkg/approval"}, "", false},
	// Delivery (issue 44): nothing writes to a delivered cluster, nothing
	// secret goes to a registry, an unobserved release vouches for nothing.
	{"a delivered cluster's client that writes", "pkg/kube/getter.go",
		"	if g.flags.WrapConfigFn != nil {",
		"	if false {",
		[]string{"./pkg/kube"}, "", false},
	{"a review path that lets any POST through", "pkg/kube/readonly.go",
		"strings.HasPrefix(path, \"/apis/\") && strings.HasSuffix(path, r) && strings.Count(path, \"/\") == 4",
		"strings.HasSuffix(path, r)",
		[]string{"./pkg/kube"}, "", false},
	{"a Secret published to a registry", "pkg/publish/artifact.go",
		"if o.GetKind() == \"Secret\" && o.GetAPIVersion() == \"v1\" {",
		"if false {",
		[]string{"./pkg/vet"}, "", false},
	{"an unobserved release counted as verified", "pkg/rollout/promotion.go",
		"\tif vouched && r.Exists",
		"\tif r.Exists",
		[]string{"./pkg/rollout"}, "", false},
	// Trust, fifth pass (issue 61): push rights alone deploy nothing.
	{"a pause record the key did not sign that holds nothing", "pkg/target/registry/pauses.go",
		"return map[string]string{pause.All: string(held)}, nil",
		"return map[string]string{\"\": string(held)[:0]}, nil",
		[]string{"./pkg/target/registry"}, "", false},
	{"a rollback that takes an artifact without checking its signature", "pkg/rollout/published_artifacts.go",
		"if err := e.signedFor(ctx, d, c.Name, app); err != nil {",
		"if err := e.signedFor(ctx, d, c.Name, app); false && err != nil {",
		[]string{"./pkg/rollout"}, "TestPublishedSigning", false},
	{"a record read without its signature", "pkg/publish/history.go",
		"if err := r.Records.verifyRecord(repo.Tag(tag), data, sig); err != nil {",
		"if err := r.Records.verifyRecord(repo.Tag(tag), data, sig); false && err != nil {",
		[]string{"./pkg/publish", "./pkg/target/registry"}, "", false},
	{"a rollback to an artifact no signature of the fleet's app names", "pkg/publish/claim.go",
		"case c.Fleet != want.Fleet || c.App != want.App:",
		"case false:",
		[]string{"./pkg/publish"}, "", false},
	{"a rollback to an artifact that is not the recorded render", "pkg/target/registry/rollback.go",
		"if got := digest.Render(objs, nil); got != rev.Digest {",
		"if got := digest.Render(objs, nil); false && got != rev.Digest {",
		[]string{"./pkg/target/registry"}, "", false},
	{"plain HTTP to a private registry without insecure", "pkg/publish/registry.go",
		"\tif insecure {\n\t\treturn base\n\t}",
		"\tif true {\n\t\treturn base\n\t}",
		[]string{"./pkg/publish"}, "TestTLSUnlessInsecure", false},
	{"a tag's deletion redirected, its delete token sent to another host", "pkg/publish/registry.go",
		"CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }",
		"CheckRedirect: nil",
		[]string{"./pkg/publish"}, "TestUntagFollowsNoRedirect", false},
	{"an artifact read without its digest checked", "pkg/publish/unpack.go",
		"io.Copy(io.Discard, io.LimitReader(rc, MaxContent))",
		"io.Copy(io.Discard, io.LimitReader(rc, 0))",
		[]string{"./pkg/publish"}, "TestUnpackChecksTheLayersDigest", false},
	{"a check that inherits the signing key", "pkg/rollout/checks.go",
		"signing(f.Clusters[i].Delivery)",
		"_ = f.Clusters[i].Delivery",
		[]string{"./pkg/rollout"}, "TestCheckEnvironment", false},
	{"a paused cluster's artifact signed (a gate skipped before signing)", "pkg/rollout/published_apps.go",
		"if held := pause.Find(p.paused, app.Name); held != nil {",
		"if held := pause.Find(p.paused, app.Name); false && held != nil {",
		[]string{"./pkg/rollout"}, "TestPublishedSigning", false},
	{"a tag moved by hand to an unreleased artifact taken for a no-op, left unsigned", "pkg/rollout/published.go",
		"if unchanged := found && prev == a.digest && !rev.New; !unchanged {",
		"if unchanged := found && prev == a.digest; !unchanged {",
		[]string{"./pkg/rollout"}, "TestPublishedSignsATagMovedAhead", false},
	{"a delivered cluster's pause record not read because a listing was trusted blindly", "pkg/rollout/published_apps.go",
		"return l.at, !l.paused[cluster]",
		"return l.at, true",
		[]string{"./pkg/rollout"}, "TestPublishedUnchanged", false},
	{"an unchanged delivered app that takes an artifact its history does not vouch for", "pkg/rollout/published_artifacts.go",
		"cur.Digest != f.digest ||",
		"false ||",
		[]string{"./pkg/rollout"}, "TestPublishedUnchanged", false},
	{"a release recorded verified before its group's checks ran", "pkg/rollout/verdicts.go",
		"\t\t\tout = append(out, \"check \"+chk.Name)",
		"\t\t\t_ = chk",
		[]string{"./pkg/rollout"}, "TestAppFinal", false},
	{"an analysis that never succeeded passes (no data passes)", "pkg/analysis/analysis.go",
		"if t.successful == 0 {",
		"if t.successful < 0 {",
		[]string{"./pkg/analysis"}, "TestRun", false},
	{"a soak ends before its analyses are over", "pkg/rollout/soak.go",
		"over := pending == 0 && !time.Now().Before(end)",
		"over := !time.Now().Before(end)",
		[]string{"./pkg/rollout"}, "TestSoakAnalysis", false},
	{"an automatic rollback reaches into another track", "pkg/rollout/undo.go",
		"if !slices.Contains(scope, e.waves[i].Group) {",
		"if false && !slices.Contains(scope, e.waves[i].Group) {",
		[]string{"./pkg/rollout"}, "TestUndo", false},
	{"an analysis's credentials follow a redirect to another host", "pkg/analysis/providers.go",
		"if r.URL.Host == t.host {",
		"if true || r.URL.Host == t.host {",
		[]string{"./pkg/analysis"}, "TestCredentialsStayHome", false},
	{"a read-only proxy that takes any token", "pkg/kube/readonlyproxy.go",
		"if subtle.ConstantTimeCompare([]byte(r.Header.Get(\"Authorization\")), want) != 1 {",
		"if subtle.ConstantTimeCompare([]byte(r.Header.Get(\"Authorization\")), want) != 1 && false {",
		[]string{"./pkg/kube"}, "TestReadOnlyProxy", false},
	{"an approval that never expires", "pkg/approval/approval.go",
		"case ok && a.Digest == d && rules.Expires > 0 && now.Sub(a.At) > rules.Expires:",
		"case false:",
		[]string{"./pkg/approval"}, "TestCheck", false},
	{"markdown in a report cell", "pkg/report/report.go",
		"func cell(s string) string { return cellEscapes.Replace(s) }",
		"func cell(s string) string { return strings.ReplaceAll(s, \"|\", `\\|`) }",
		[]string{"./pkg/report"}, "TestMarkdownCellsAreText", false},
	{"a cache folder read as it is", "pkg/ocisource/ocisource.go",
		"if _, err := os.Stat(dir); err == nil && folderTree(dir) == treeOf(entries) {",
		"if _, err := os.Stat(dir); err == nil {",
		[]string{"./pkg/ocisource"}, "TestFetchCacheVerifiedOnRead", false},
	{"a pause record written over a concurrent pause", "pkg/target/registry/pauses.go",
		"\t\tif done(after) {",
		"\t\tif true || done(after) {",
		[]string{"./pkg/target/registry"}, "TestPublishedPauseAndResumeAtOnce", false},
	{"a render that decrypted a value published", "pkg/render/limits.go",
		"\tif decrypted {\n\t\tf.decrypted.Store(true)",
		"\tif false && decrypted {\n\t\tf.decrypted.Store(true)",
		[]string{"./pkg/render"}, "TestRenderDecryptedProvenance", false},
}

func main() {
	only := flag.String("run", "", "only the mutants whose name matches this regular expression")
	e2e := flag.Bool("e2e", false, "also run the hunt (TestHunt) against the ownership mutants")
	huntOnly := flag.Bool("hunt", false, "run only the hunt (TestHunt) against the ownership mutants, no unit test")
	flag.Parse()
	re, err := regexp.Compile(*only)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutants:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	killed, total := 0, 0
	for _, m := range mutants {
		if !re.MatchString(m.name) || *huntOnly && !m.hunt {
			continue
		}
		if *huntOnly {
			m.pkgs = nil
		}
		total++
		ok, how, err := m.try(ctx, *e2e)
		switch {
		case err != nil:
			fmt.Printf("ERROR     %s: %v\n", m.name, err)
		case ok:
			killed++
			fmt.Printf("killed    %s (%s)\n", m.name, how)
		default:
			fmt.Printf("SURVIVED  %s: %s\n", m.name, how)
		}
		if ctx.Err() != nil {
			break
		}
	}
	fmt.Printf("mutants: %d of %d killed\n", killed, total)
	if killed < total {
		os.Exit(1)
	}
}

// try plants m, runs its tests, and restores the file: killed reports
// whether the tests failed.
func (m mutant) try(ctx context.Context, e2e bool) (killed bool, how string, err error) {
	orig, err := os.ReadFile(m.file)
	if err != nil {
		return false, "", err
	}
	if n := strings.Count(string(orig), m.old); n != 1 {
		return false, "", fmt.Errorf("%s: the line to change is there %d times, want once: the code moved, update the mutant", m.file, n)
	}
	if err := os.WriteFile(m.file, []byte(strings.Replace(string(orig), m.old, m.new, 1)), 0o644); err != nil {
		return false, "", err
	}
	defer func() {
		if rerr := os.WriteFile(m.file, orig, 0o644); rerr != nil && err == nil {
			err = rerr
		}
	}()
	start := time.Now()
	if len(m.pkgs) > 0 {
		args := append([]string{"test", "-count=1", "-timeout", "10m"}, m.pkgs...)
		if m.run != "" {
			args = append(args, "-run", m.run)
		}
		out, terr := exec.CommandContext(ctx, "go", args...).CombinedOutput()
		if strings.Contains(string(out), "[build failed]") || strings.Contains(string(out), "[setup failed]") {
			return false, "", fmt.Errorf("the mutant does not build:\n%s", out)
		}
		if ctx.Err() != nil {
			return false, "", ctx.Err() // interrupted: neither killed nor survived
		}
		if terr != nil {
			return true, fmt.Sprintf("%s in %s", firstFail(string(out)), time.Since(start).Round(time.Second)), nil
		}
	}
	if m.hunt && (e2e || len(m.pkgs) == 0) {
		hunt := exec.CommandContext(ctx, "go", "test", "-count=1", "-timeout", "30m", "-run", "^TestHunt$", "./test/e2e")
		hunt.Env = append(os.Environ(), "HUNT_SHRINK=0") // found is enough: no shorter sequence sought
		out, err := hunt.CombinedOutput()
		if ctx.Err() != nil {
			return false, "", ctx.Err()
		}
		if err != nil {
			return true, fmt.Sprintf("TestHunt: %s in %s", huntFinding(string(out)), time.Since(start).Round(time.Second)), nil
		}
	}
	ran := m.pkgs
	if m.hunt && (e2e || len(m.pkgs) == 0) {
		ran = append(ran, "TestHunt")
	}
	return false, "every test passed: " + strings.Join(ran, " "), nil
}

// huntFinding is what the hunt said it found ("seed 1: …"), one line.
func huntFinding(out string) string {
	for line := range strings.Lines(out) {
		if _, f, ok := strings.Cut(line, "data-loss hunt: "); ok {
			return strings.TrimSpace(f)
		}
	}
	return firstFail(out)
}

// firstFail is the first failing test's name in go test's output.
func firstFail(out string) string {
	for line := range strings.Lines(out) {
		if f, ok := strings.CutPrefix(strings.TrimSpace(line), "--- FAIL: "); ok {
			return strings.Fields(f)[0]
		}
	}
	return "the tests failed"
}
