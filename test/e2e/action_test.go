package e2e

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestGitHubAction: the repository's action.yml is a composite action
// whose step is hack/action/run.sh, and that script, run as GitHub runs
// it, installs a release (the archives make dist builds, served by the
// test) after checking its checksum, runs a diff against the test bed,
// puts the report in the job summary and the exit code in the step's
// outputs; an archive whose checksum does not match is refused.
func TestGitHubAction(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the action's script runs on the test bed's Linux")
	}
	// Read strictly: a misspelt key of action.yml fails here, not on GitHub.
	var action struct {
		Name        string            `json:"name"`
		Description string            `json:"description"`
		Branding    map[string]string `json:"branding"`
		Inputs      map[string]struct {
			Description string `json:"description"`
			Required    bool   `json:"required"`
			Default     string `json:"default"`
		} `json:"inputs"`
		Outputs map[string]struct {
			Description string `json:"description"`
			Value       string `json:"value"`
		} `json:"outputs"`
		Runs struct {
			Using string `json:"using"`
			Steps []struct {
				ID    string            `json:"id"`
				Shell string            `json:"shell"`
				Run   string            `json:"run"`
				Env   map[string]string `json:"env"`
			} `json:"steps"`
		} `json:"runs"`
	}
	data, err := os.ReadFile(filepath.Join(repo, "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, &action); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	if action.Runs.Using != "composite" || len(action.Runs.Steps) != 1 || !strings.Contains(action.Runs.Steps[0].Run, "hack/action/run.sh") ||
		!action.Inputs["version"].Required || !action.Inputs["command"].Required || action.Runs.Steps[0].Env["INPUT_COMMAND"] == "" {
		t.Errorf("action.yml: %+v", action)
	}
	for _, in := range []string{"version", "command", "ok-exit-codes", "comment", "download-url"} {
		if _, ok := action.Inputs[in]; !ok {
			t.Errorf("action.yml has no input %s", in)
		}
	}

	mk := exec.Command("make", "dist", "PLATFORMS=linux/"+runtime.GOARCH, "DIST_VERSION=v0.1.0", "KREW_URI=http://unused")
	mk.Dir = repo
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make dist: %v\n%s", err, out)
	}
	releases := t.TempDir()
	for _, name := range []string{"checksums.txt", "kubectl-fleet_linux_" + runtime.GOARCH + ".tar.gz"} {
		b, err := os.ReadFile(filepath.Join(repo, "dist", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(releases, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(releases)))
	defer srv.Close()

	dir := workdir(t, stgOnly+"apps:\n  - {name: action, manifests: app.yaml}\n", map[string]string{"app.yaml": namespaced("e2e-action", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: e2e-action}\n")})
	run := func(command, okCodes string) (summary, outputs, stderr string, code int) {
		t.Helper()
		tmp := t.TempDir()
		cmd := exec.Command("bash", filepath.Join(repo, "hack", "action", "run.sh"))
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "TMPDIR="+ownTemp(t), "KUBECONFIG="+env.Kubeconfig, "NO_COLOR=1",
			"INPUT_VERSION=v0.1.0", "INPUT_COMMAND="+command, "INPUT_OK_EXIT_CODES="+okCodes, "INPUT_COMMENT=false",
			"INPUT_DOWNLOAD_URL="+srv.URL+"/ARCHIVE", "RUNNER_TEMP="+tmp,
			"GITHUB_STEP_SUMMARY="+filepath.Join(tmp, "summary.md"), "GITHUB_OUTPUT="+filepath.Join(tmp, "output"), "GITHUB_PATH="+filepath.Join(tmp, "path"))
		_, errOut, code := runCmd(t, cmd, "")
		s, _ := os.ReadFile(filepath.Join(tmp, "summary.md"))
		o, _ := os.ReadFile(filepath.Join(tmp, "output"))
		return string(s), string(o), errOut, code
	}
	summary, outputs, errOut, code := run("diff -F "+filepath.Join(dir, "fleet.yaml"), "0,1")
	if code != 0 || !strings.Contains(outputs, "exit-code=1") || !strings.Contains(summary, "### kubectl fleet diff") || !strings.Contains(summary, "| stg | staging | 2 | 0 | 0 | 0 | differs |") {
		t.Errorf("diff through the action: exit %d, outputs %q\nsummary:\n%s\nstderr:\n%s", code, outputs, summary, errOut)
	}
	if _, outputs, _, code := run("diff -F "+filepath.Join(dir, "fleet.yaml"), "0"); code != 1 || !strings.Contains(outputs, "exit-code=1") {
		t.Errorf("a diff with differences, 1 not allowed: exit %d, outputs %q", code, outputs)
	}

	// A release whose archive does not match its checksums is refused.
	if err := os.WriteFile(filepath.Join(releases, "checksums.txt"), []byte(strings.Repeat("0", 64)+"  kubectl-fleet_linux_"+runtime.GOARCH+".tar.gz\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, errOut, code := run("version", "0"); code == 0 || !strings.Contains(errOut, "refusing it") {
		t.Errorf("a tampered release: exit %d\n%s", code, errOut)
	}
}
