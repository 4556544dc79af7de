package e2e

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReports: diff, apply, rollback and status write a markdown or JUnit
// report for CI, and append the markdown one to a GitHub Actions job
// summary without any flag. No Secret value reaches a report.
func TestReports(t *testing.T) {
	const marker = "zq-report-marker-5150"
	secret := func(value string) string {
		return namespaced("e2e-report", "apiVersion: v1\nkind: Secret\nmetadata: {name: creds, namespace: e2e-report}\nstringData: {password: "+value+"}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf, namespace: e2e-report}\ndata: {cluster: '${FLEET_CLUSTER_NAME}'}\n")
	}
	dir := workdir(t, twoGroups, map[string]string{"app/all.yaml": secret(marker)})
	app := filepath.Join(dir, "app")
	summary := filepath.Join(t.TempDir(), "step-summary.md")
	run := func(want int, args ...string) string {
		t.Helper()
		cmd := kubectlCmd(t, append([]string{"fleet", "-F", filepath.Join(dir, "fleet.yaml")}, args...)...)
		cmd.Env = append(cmd.Env, "GITHUB_STEP_SUMMARY="+summary)
		out, err := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != want {
			t.Fatalf("%s: exit %d (%v), want %d\n%s", strings.Join(args, " "), code, err, want, out)
		}
		return string(out)
	}
	read := func(p string) string {
		t.Helper()
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	md := filepath.Join(t.TempDir(), "diff.md")
	run(1, "diff", "-f", app, "--name", "report", "--report", md)
	got := read(md)
	for _, want := range []string{
		"### kubectl fleet diff",
		"| cluster | group | create | change | prune | unchanged | state |",
		"| stg | staging | 3 | 0 | 0 | 0 | differs |",
		"| prod-b | production | 3 | 0 | 0 | 0 | differs |",
		"<details><summary>prod-a: differs</summary>",
		"```diff\n",
		"+  password: '***'",
		"+  cluster: prod-a",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("diff report lacks %q:\n%s", want, got)
		}
	}
	junit := filepath.Join(t.TempDir(), "apply.xml")
	run(0, "apply", "-f", app, "--name", "report", "--yes", "--report", junit, "--report-format", "junit")
	var suites struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name      string    `xml:"name,attr"`
				Classname string    `xml:"classname,attr"`
				Failure   *struct{} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(read(junit)), &suites); err != nil {
		t.Fatalf("apply junit: %v\n%s", err, read(junit))
	}
	if suites.Tests != 6 || suites.Failures != 0 || len(suites.Suites) != 2 || suites.Suites[1].Cases[0].Name != "prod-a" || suites.Suites[1].Cases[1].Name != "prod-a/report" {
		t.Errorf("apply junit: %+v\n%s", suites, read(junit))
	}
	// A change the server rejects on staging: a failure case, with why.
	if err := os.WriteFile(filepath.Join(app, "bad.yaml"), []byte("apiVersion: v1\nkind: Service\nmetadata: {name: broken, namespace: e2e-report}\nspec:\n  ports: [{port: 0}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(1, "apply", "-f", app, "--name", "report", "--yes", "--report", junit, "--report-format", "junit")
	got = read(junit)
	if !strings.Contains(got, `<testcase name="stg/report" classname="staging.stg">`) || !strings.Contains(got, `<failure message="failed: 1 of 3 objects failed" type="failed">1 of 3 objects failed&#xA;service/broken: Service &#34;broken&#34; is invalid`) || !strings.Contains(got, `<testcase name="prod-a" classname="production">`) {
		t.Errorf("failed apply junit:\n%s", got)
	}
	if err := os.Remove(filepath.Join(app, "bad.yaml")); err != nil {
		t.Fatal(err)
	}
	st := filepath.Join(t.TempDir(), "status.md")
	run(0, "status", "-f", app, "--name", "report", "--report", st)
	if got := read(st); !strings.Contains(got, "| stg | staging | report: 3 of 3 Current (r1 verified) | ok |") {
		t.Errorf("status report:\n%s", got)
	}
	// The job summary got every command's markdown report, and nothing a
	// Secret holds.
	s := read(summary)
	if strings.Count(s, "### kubectl fleet ") != 4 || !strings.Contains(s, "### kubectl fleet apply") || !strings.Contains(s, "### kubectl fleet status") {
		t.Errorf("job summary:\n%s", s)
	}
	for _, f := range []string{md, junit, st, summary} {
		if strings.Contains(read(f), marker) {
			t.Errorf("%s holds a Secret value", f)
		}
	}
}
