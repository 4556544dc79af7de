package main

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("profile (-want +got):\n%s", diff)
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
	want := profile{Scenario: "x", Requests: 4, Objects: 4, Waits: 2, Steps: []string{"3× PATCH configmaps of the app", "PATCH the app's namespace"}}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("profile (-want +got):\n%s", diff)
	}
}
