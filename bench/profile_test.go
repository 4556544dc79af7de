package main

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestParseProfile reads a real --v=6 log of a rollout that changed one
// ConfigMap on one cluster 50 ms away.
func TestParseProfile(t *testing.T) {
	log, err := os.ReadFile("testdata/change-v6.log")
	if err != nil {
		t.Fatal(err)
	}
	p := parseProfile("apply-change", string(log), "bench-fleet")
	want := profile{Scenario: "apply-change", Requests: 16, Objects: 1, Waits: 15, Steps: []string{
		"POST selfsubjectreviews",
		"POST leases (kubectl-fleet)",
		"GET configmaps/fleet-bench (kubectl-fleet)",
		"GET configmaps (kubectl-fleet)",
		"PATCH namespaces/kubectl-fleet",
		"PATCH configmaps/fleet-bench (kubectl-fleet)",
		"GET namespaces",
		"GET configmaps (bench-fleet)",
		"GET deployments (bench-fleet)",
		"PATCH configmaps of the app",
		"GET secrets (kubectl-fleet)",
		"POST selfsubjectreviews",
		"PATCH secrets/fleet-bench.v2 (kubectl-fleet)",
		"PATCH namespaces/kubectl-fleet",
		"PATCH configmaps/fleet-bench (kubectl-fleet)",
		"DELETE leases/fleet-bench (kubectl-fleet)",
	}}
	if diff := cmp.Diff(want, p, cmpopts.IgnoreUnexported(profile{}), cmpopts.IgnoreFields(profile{}, "WaitMS")); diff != "" {
		t.Errorf("profile (-want +got):\n%s", diff)
	}
	if len(p.WaitMS) != p.Waits || slices.ContainsFunc(p.WaitMS, func(ms int) bool { return ms < 50 }) {
		t.Errorf("waits of %v ms: want %d, each at least the 50 ms round trip", p.WaitMS, p.Waits)
	}
}

// TestShortenCollapses names requests for the app's objects by kind, so
// that many in a row read as one step.
func TestShortenCollapses(t *testing.T) {
	var log strings.Builder
	for _, name := range []string{"cm-000", "cm-002", "cm-004"} {
		log.WriteString(`I1123 11:10:17.563527   30198 round_trippers.go:632] "Response" verb="PATCH" url="https://h/api/v1/namespaces/app/configmaps/` + name + `?fieldManager=x" status="200 OK" milliseconds=50` + "\n")
	}
	log.WriteString(`I1123 11:10:17.663527   30198 round_trippers.go:632] "Response" verb="PATCH" url="https://h/api/v1/namespaces/app" status="200 OK" milliseconds=50` + "\n")
	p := parseProfile("x", log.String(), "app")
	want := profile{Scenario: "x", Requests: 4, Objects: 4, Waits: 2, Steps: []string{"3× PATCH configmaps of the app", "PATCH the app's namespace"}, WaitMS: []int{50, 50}}
	if diff := cmp.Diff(want, p, cmpopts.IgnoreUnexported(profile{})); diff != "" {
		t.Errorf("profile (-want +got):\n%s", diff)
	}
}
