package e2e

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kubectl-fleet/kubectl-fleet/internal/registrytest"
	"github.com/kubectl-fleet/kubectl-fleet/internal/testenv"
	artifact "github.com/kubectl-fleet/kubectl-fleet/pkg/publish"
)

// ociFleet deploys app web from a kustomize base published as a Flux
// artifact at ref (its folder base/), verified with cosign.pub, to
// three clusters.
func ociFleet(ref string) string {
	return `apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: e2e-oci}
groups:
  - name: staging
  - name: production
clusters:
  - {name: oci-stg, group: staging, context: fleet-c1}
  - {name: oci-eu, group: production, context: fleet-c2}
  - {name: oci-us, group: production, context: fleet-c3}
apps:
  - name: ocibase
    kustomize: ` + ref + `
    path: base
    verify: {provider: cosign, key: cosign.pub}
`
}

// baseArtifact is a kustomize base, version v, as flux push artifact
// packs a folder: kustomization.yaml at its root (what -k renders) and
// base/ (what the fleet's path names).
func baseArtifact(t *testing.T, v string) v1.Image {
	t.Helper()
	img, err := registrytest.FluxArtifact(map[string][]byte{
		"kustomization.yaml":      []byte("resources: [base]\n"),
		"base/kustomization.yaml": []byte("resources: [ns.yaml, cm.yaml]\n"),
		"base/ns.yaml":            []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: e2e-oci}\n"),
		"base/cm.yaml":            []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, namespace: e2e-oci}\ndata: {version: \"" + v + "\", cluster: \"${FLEET_CLUSTER_NAME}\"}\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// TestOCISources is an app whose kustomize base is an OCI artifact in a
// registry on loopback: refused unsigned before any write, then
// applied to three clusters with its digest in the history, a plan
// refused once the tag moved, the new artifact applied and rolled back,
// pinned by deps update, and rendered from the cache with the registry
// down.
func TestOCISources(t *testing.T) {
	ctx := context.Background()
	reg, err := testenv.StartRegistry("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Stop)
	host := reg.Host
	base, err := artifact.ParseRegistry("oci://"+host+"/bases", true)
	if err != nil {
		t.Fatal(err)
	}
	base.Keychain = authn.NewMultiKeychain()
	signer, err := artifact.LoadSigner([]byte(signingKey(t)), nil)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := signer.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	push := func(v string, sign bool) v1.Hash {
		t.Helper()
		d, err := base.Push(ctx, "web", baseArtifact(t, v))
		if err == nil && sign {
			err = base.Sign(ctx, "web", d, signer, artifact.Claim{})
		}
		if err == nil {
			err = base.Tag(ctx, "web", "stable", d)
		}
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	t.Setenv("KUBECTL_FLEET_OCI_CACHE", t.TempDir())
	ref := "oci://" + host + "/bases/web:stable"
	dir := workdir(t, ociFleet(ref), map[string]string{"cosign.pub": string(pub)})
	t.Cleanup(func() { _, _, _ = fleet(t, dir, "delete", "--yes") })
	version := func(ctx string) string {
		v, _, _ := kubectl(t, "", "--context", ctx, "-n", "e2e-oci", "get", "configmap", "web", "-o", "jsonpath={.data.version}")
		return v
	}

	// Unsigned: refused before any cluster is written to.
	unsigned := push("1", false)
	out, errOut, code := fleet(t, dir, "apply", "--yes")
	if code == 0 || !strings.Contains(errOut, "it is not signed") || !strings.Contains(errOut, "wanted a signature by cosign.pub") || !absent(t, "fleet-c1", "namespace", "e2e-oci") {
		t.Fatalf("apply of an unsigned source: exit %d\n%s%s", code, out, errOut)
	}

	// Signed: vet says the artifact and its signer; apply pins its digest.
	d1 := push("1", true)
	if d1 != unsigned {
		t.Fatalf("the same content pushed twice: %s, %s", unsigned, d1)
	}
	if out, errOut, code := fleet(t, dir, "vet", "--no-kubeconfig"); code != 0 || !strings.Contains(out, "app ocibase: oci://"+host+"/bases/web@"+d1.String()+" (flux artifact), signed by cosign.pub") {
		t.Fatalf("vet: exit %d\n%s%s", code, out, errOut)
	}
	report := filepath.Join(dir, "report.md")
	if out, errOut, code := fleet(t, dir, "apply", "--yes", "-o", "json", "--report", report); code != 0 || version("fleet-c3") != "1" || !strings.Contains(out, `"source":"oci://`+host+`/bases/web@`+d1.String()+`"`) {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	if md, err := os.ReadFile(report); err != nil || !strings.Contains(markdownText(string(md)), "ocibase from oci://"+host+"/bases/web@"+short(d1.String())) {
		t.Fatalf("the report does not name the artifact (%v):\n%s", err, md)
	}
	out, errOut, _ = fleet(t, dir, "history", "-c", "oci-us", "-o", "json")
	if !strings.Contains(out, `"artifact":"oci://`+host+`/bases/web@`+d1.String()+`"`) {
		t.Fatalf("history does not record the artifact:\n%s%s", out, errOut)
	}
	if out, _, _ := fleet(t, dir, "history", "-c", "oci-us"); !strings.Contains(out, "web@"+short(d1.String())) {
		t.Fatalf("history's SOURCE does not name the artifact:\n%s", out)
	}

	// A plan binds the artifact: the tag moved since, apply --plan refuses.
	plan := filepath.Join(dir, "plan.json")
	if out, errOut, code := fleet(t, dir, "diff", "--out", plan); code > 1 {
		t.Fatalf("diff --out: exit %d\n%s%s", code, out, errOut)
	}
	d2 := push("2", true)
	out, errOut, code = fleet(t, dir, "apply", "--yes", "--plan", plan)
	if code == 0 || !strings.Contains(out+errOut, "the source of app ocibase moved since the plan: planned oci://"+host+"/bases/web@"+d1.String()+", now oci://"+host+"/bases/web@"+d2.String()) || version("fleet-c1") != "1" {
		t.Fatalf("apply --plan after the tag moved: exit %d\n%s%s", code, out, errOut)
	}

	// The tag's new artifact, applied; rolled back to the one before.
	if out, errOut, code := fleet(t, dir, "apply", "--yes"); code != 0 || version("fleet-c2") != "2" {
		t.Fatalf("apply of the moved tag: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := fleet(t, dir, "rollback", "--yes", "-c", "oci-eu"); code != 0 || version("fleet-c2") != "1" {
		t.Fatalf("rollback: exit %d\n%s%s", code, out, errOut)
	}

	// deps update pins the tag's digest now; the tag moves on, renders
	// keep the pinned artifact, from the cache with the registry down.
	if out, errOut, code := fleet(t, dir, "deps", "update"); code != 0 || !strings.Contains(out, "ocibase: "+ref+" "+d2.String()+" (flux, signed by cosign.pub)") {
		t.Fatalf("deps update: exit %d\n%s%s", code, out, errOut)
	}
	push("3", true)
	render := func() (string, string, int) {
		return fleet(t, dir, "render", "-c", "oci-stg")
	}
	if out, errOut, code := render(); code != 0 || !strings.Contains(out, `version: "2"`) || !strings.Contains(out, "cluster: oci-stg") {
		t.Fatalf("render of the pinned source: exit %d\n%s%s", code, out, errOut)
	}
	// An ad hoc source renders the artifact's root.
	if out, errOut, code := kubectl(t, "", "fleet", "-F", filepath.Join(dir, "fleet.yaml"), "render", "-c", "oci-stg", "-k", ref, "--name", "ocibase-adhoc"); code != 0 || !strings.Contains(out, `version: "3"`) {
		t.Fatalf("render -k oci://: exit %d\n%s%s", code, out, errOut)
	}
	reg.Stop()
	if out, errOut, code := render(); code != 0 || !strings.Contains(out, `version: "2"`) {
		t.Fatalf("render of the pinned source, registry down: exit %d\n%s%s", code, out, errOut)
	}
}

// markdownText is md with its backslash escapes read, as a markdown
// renderer shows it (a report's table cell escapes markdown's
// punctuation: "oci:\/\/host/web\@sha256:…").
func markdownText(md string) string { return markdownEscape.ReplaceAllString(md, "$1") }

var markdownEscape = regexp.MustCompile("\\\\([!-/:-@\\[-`{-~])")
