package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// TestBench runs make bench's program once at a tiny size (2 clusters, 5
// objects, 1 repetition, 2 starts, a render, a chart render and a render
// of 3 SOPS files for 3 clusters, and the scaling run on 2 and 3 stand-in
// clusters), so that it cannot rot:
// every scenario must produce a row for every tool, with a time, and the
// request profiles of kubectl fleet's no-op and rollout. No time is
// judged here.
func TestBench(t *testing.T) {
	build := exec.Command(filepath.Join(repo, "hack", "controlplane", "build.sh"), "kustomize", "envsubst", "helm", "sops")
	build.Stderr = os.Stderr
	out, err := build.Output()
	if err != nil {
		t.Fatalf("building kustomize and envsubst: %v", err)
	}
	if dir := strings.TrimSpace(string(out)); dir != binDir {
		t.Fatalf("build.sh put kustomize in %s, the control plane is in %s", dir, binDir)
	}
	var got struct {
		Rows []struct {
			Scenario, Tool string
			Median         float64
			MaxRSS         int64
			Runs           int
		}
		Profiles []struct {
			Scenario string
			Requests int
			Objects  int `json:"objectRequests"`
			Waits    int
			Steps    []string
		}
		Scale []struct {
			Backend            string
			Clusters           int
			Scenario           string
			Runs               int
			Wall               float64 `json:"wallSeconds"`
			CPU                float64 `json:"cpuSeconds"`
			RSS                int64   `json:"peakRSSBytes"`
			FDs                int     `json:"peakFDs"`
			Goroutines         int     `json:"peakGoroutines"`
			RequestsPerCluster float64 `json:"requestsPerCluster"`
			Failed             int
			Failure            string
		}
	}
	stdout := runBench(t, &got, "-bin-dir", binDir, "-clusters", "2", "-objects", "5", "-reps", "1", "-starts", "2", "-render", "3", "-publish", "3", "-helm-render", "3", "-sops-render", "3", "-sops-files", "3", "-oci-render", "3", "-analyse", "3",
		"-scale", "2,3", "-scale-real", "0", "-scale-reps", "1")
	want := map[string][]string{
		"start":                   {"fleet", "kubectl"},
		"render-3":                {"fleet", "loop"},
		"oci-render-3":            {"fleet", "folder"},
		"oci-pull-5mb":            {"fleet", "crane"},
		"publish-3":               {"fleet", "loop"},
		"publish-3-shared":        {"fleet", "loop"},
		"publish-3-signed":        {"fleet"},
		"publish-3-shared-signed": {"fleet"},
		"publish-3-noop":          {"fleet"},
		"publish-3-signed-noop":   {"fleet"},
		"helm-render-3":           {"fleet", "loop"},
		"sops-render-3":           {"fleet", "plain", "loop"},
		"analyse-3":               {"fleet", "floor"},
		"apply-create":            {"fleet", "loop", "loop-par", "floor"},
		"apply-noop":              {"fleet", "loop", "loop-par", "floor"},
		"apply-change":            {"fleet", "loop", "loop-par", "floor"},
		"diff-noop":               {"fleet", "loop", "loop-par"},
	}
	seen := map[string]bool{}
	for _, r := range got.Rows {
		seen[r.Scenario+"/"+r.Tool] = true
		if r.Runs != 1 || r.Median <= 0 {
			t.Errorf("%s/%s: %d runs, median %v s; want 1 run with a time", r.Scenario, r.Tool, r.Runs, r.Median)
		}
		if runtime.GOOS == "linux" && r.MaxRSS <= 0 {
			t.Errorf("%s/%s: no peak RSS", r.Scenario, r.Tool)
		}
	}
	for sc, tools := range want {
		for _, tool := range tools {
			if !seen[sc+"/"+tool] {
				t.Errorf("no result for %s with %s", sc, tool)
			}
			if !strings.Contains(stdout, "| "+tool+" |") {
				t.Errorf("the table has no row for %s", tool)
			}
		}
	}
	if len(got.Rows) != 38 {
		t.Errorf("%d rows, want 38", len(got.Rows))
	}
	if !regexp.MustCompile(` KiB pushed, [1-9][0-9]* requests \|`).MatchString(stdout) {
		t.Error("the publish rows say no bytes pushed, or no requests")
	}
	// Issue 64's publish goals are judged at the largest fleet published.
	for _, goal := range []string{"publish 3 delivered clusters, each render its own, in at most 10 ms", "the same again, nothing changed, in at most 1 request", "publish 3 delivered clusters, two renders shared, under 512 MiB"} {
		if !regexp.MustCompile(regexp.QuoteMeta(goal) + `.*: \*\*(met|missed)\*\*`).MatchString(stdout) {
			t.Errorf("no goal line %q", goal)
		}
	}
	// The rollout changed one object (a fifth of 5) on the profiled
	// cluster: one request for it; the no-op sends none.
	profiles := map[string]int{}
	for _, p := range got.Profiles {
		if p.Requests == 0 || p.Waits == 0 || p.Waits > p.Requests || len(p.Steps) == 0 {
			t.Errorf("profile %s: %d requests in %d waits, steps %q", p.Scenario, p.Requests, p.Waits, p.Steps)
		}
		profiles[p.Scenario] = p.Objects
	}
	if n, ok := profiles["apply-noop"]; !ok || n != 0 {
		t.Errorf("no-op profile: %d requests for the app's objects (present: %v), want 0", n, ok)
	}
	if n, ok := profiles["apply-change"]; !ok || n != 1 {
		t.Errorf("rollout profile: %d requests for the app's objects (present: %v), want 1", n, ok)
	}
	// The scaling run: every step of the rollout at both sizes on the
	// stand-in, with figures that say something.
	scaled := map[string]bool{}
	for _, r := range got.Scale {
		id := fmt.Sprintf("%s/%d/%s", r.Backend, r.Clusters, r.Scenario)
		scaled[id] = true
		if r.Runs != 1 || r.Wall <= 0 || r.CPU <= 0 || r.Goroutines <= 0 || r.RequestsPerCluster <= 0 || r.Failed > 0 {
			t.Errorf("scaling %s: %+v; want 1 run with a time, CPU, goroutines, requests and no failure", id, r)
		}
		if runtime.GOOS == "linux" && (r.RSS <= 0 || r.FDs <= 0) {
			t.Errorf("scaling %s: peak RSS %d, fds %d", id, r.RSS, r.FDs)
		}
	}
	for _, n := range []int{2, 3} {
		for _, sc := range []string{"create", "noop", "noop-batched", "change", "diff", "status"} {
			if id := fmt.Sprintf("standin/%d/%s", n, sc); !scaled[id] {
				t.Errorf("no scaling result for %s", id)
			}
		}
	}
	// The largest size again with the default --parallel.
	for _, sc := range []string{"create", "noop", "status"} {
		if id := "standin/3/" + sc + "-default-parallel"; !scaled[id] {
			t.Errorf("no scaling result for %s", id)
		}
	}
	if len(got.Scale) != 15 {
		t.Errorf("%d scaling rows, want 15 (stand-in only)", len(got.Scale))
	}
	for _, s := range []string{"render 3 clusters", "**Goals:**", "Where kubectl fleet's time goes", "Machine:", "## Scaling: the same rollout on growing fleets", "**Stand-in clusters:**", "**With the default `--parallel`**", "**Goals (issues 22 and 47):**", "1,000 clusters analysed every 30 s under one core: "} {
		if !strings.Contains(stdout, s) {
			t.Errorf("the report lacks %q:\n%s", s, stdout)
		}
	}
}

// runBench runs make bench's program with args and -json, fails the test
// if it exits non-zero, decodes its results into got, and returns its
// report (standard output).
func runBench(t *testing.T, got any, args ...string) string {
	t.Helper()
	results := filepath.Join(t.TempDir(), "results.json")
	cmd := exec.CommandContext(t.Context(), "go", append(append([]string{"run", "./bench"}, args...), "-json", results)...)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "TMPDIR="+ownTemp(t))
	stdout, stderr, code := runCmd(t, cmd, "")
	if code != 0 {
		t.Fatalf("bench %s exited %d:\n%s\n%s", strings.Join(args, " "), code, stdout, stderr)
	}
	b, err := os.ReadFile(results)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, got); err != nil {
		t.Fatal(err)
	}
	return stdout
}
