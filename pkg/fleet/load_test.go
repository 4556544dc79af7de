package fleet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const valid = `apiVersion: fleet/v1alpha1
kind: Fleet
metadata:
  name: acme
defaults:
  attributes: {registry: ghcr.io/acme, nested: {a: 1, b: 2}}
groups:
  - name: staging
    attributes: {replicas: 1}
    maxParallel: 2
    maxFailures: 0
  - name: production
    attributes: {replicas: 3, nested: {b: 20}}
    protected: true
clusters:
  - name: staging-eu
    group: staging
    context: stg-eu
    labels: {region: eu}
    attributes: {domain: eu.staging.acme.io}
  - name: prod-eu
    group: production
    context: prod-eu
    kubeconfig: ~/.kube/prod
    labels: {region: eu, tier: gold}
    server: https://10.0.0.1:6443
    uid: 7c1c0000-0000-0000-0000-000000000000
  - name: prod-us
    group: production
    context: prod-us
    labels: {region: us}
    attributes: {replicas: 5, nested: {c: 3}, list: [1, 2]}
`

func TestParseValid(t *testing.T) {
	f, err := Parse([]byte(valid), "fleet.yaml", "/fleet")
	if err != nil {
		t.Fatal(err)
	}
	if f.Metadata.Name != "acme" || len(f.Groups) != 2 || len(f.Clusters) != 3 {
		t.Fatalf("parsed %+v", f)
	}
	if !f.Groups[1].Protected || f.Groups[0].MaxParallel != (Amount{N: 2}) {
		t.Errorf("group policy not read: %+v", f.Groups)
	}
	c := f.Cluster("prod-eu")
	if c.Server != "https://10.0.0.1:6443" || c.UID == "" || c.Index != 1 {
		t.Errorf("pins not read: %+v", c)
	}
	if got := f.Line("clusters[1].context"); got != 23 {
		t.Errorf("line of clusters[1].context = %d, want 23", got)
	}
	home, _ := os.UserHomeDir()
	if got, want := f.ResolvePath(c.Kubeconfig), filepath.Join(home, ".kube/prod"); got != want {
		t.Errorf("kubeconfig %s, want %s", got, want)
	}
	if got, want := f.ResolvePath("apps/web"), filepath.Join("/fleet", "apps/web"); got != want {
		t.Errorf("relative path %s, want %s", got, want)
	}
}

func TestAttributes(t *testing.T) {
	f, err := Parse([]byte(valid), "fleet.yaml", "/fleet")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		cluster string
		want    map[string]any
	}{
		{"staging-eu", map[string]any{"registry": "ghcr.io/acme", "nested": map[string]any{"a": 1, "b": 2}, "replicas": 1, "domain": "eu.staging.acme.io"}},
		{"prod-eu", map[string]any{"registry": "ghcr.io/acme", "nested": map[string]any{"a": 1, "b": 20}, "replicas": 3}},
		{"prod-us", map[string]any{"registry": "ghcr.io/acme", "nested": map[string]any{"a": 1, "b": 20, "c": 3}, "replicas": 5, "list": []any{1, 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.cluster, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, f.Attributes(f.Cluster(tt.cluster))); diff != "" {
				t.Errorf("attributes (-want +got):\n%s", diff)
			}
		})
	}
	// Merging must not change the fleet's own maps.
	if diff := cmp.Diff(map[string]any{"a": 1, "b": 2}, f.Defaults.Attributes["nested"]); diff != "" {
		t.Errorf("defaults changed by merging:\n%s", diff)
	}
}

// replace edits the valid fleet: each pair replaces old with new.
func replace(pairs ...string) string {
	return strings.NewReplacer(pairs...).Replace(valid)
}

func TestParseGates(t *testing.T) {
	in := replace("    maxFailures: 0\n", "    maxFailures: 0\n    soak: 10m\n    verify:\n      - {name: smoke, command: [./hack/smoke.sh, --fast], timeout: 2m}\n      - {name: dns, command: [dig]}\n")
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "tests"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := Parse([]byte(in+"apps:\n  - {name: web, manifests: ., tests: tests, dependsOn: [db]}\n  - {name: db, manifests: .}\n"), "fleet.yaml", dir)
	if err != nil {
		t.Fatal(err)
	}
	g := f.Groups[0]
	want := []Check{{Name: "smoke", Command: []string{"./hack/smoke.sh", "--fast"}, Timeout: 2 * time.Minute}, {Name: "dns", Command: []string{"dig"}}}
	if g.Soak != 10*time.Minute || !cmp.Equal(g.Verify, want) {
		t.Errorf("soak %v, verify %+v", g.Soak, g.Verify)
	}
	if a := f.App("web"); a.Tests != "tests" || !cmp.Equal(a.DependsOn, []string{"db"}) {
		t.Errorf("app %+v", a)
	}
}

func TestKubeconfigOf(t *testing.T) {
	in := replace("defaults:\n", "defaults:\n  kubeconfigFrom: {env: FLEET_KUBECONFIG}\n",
		"    context: prod-us\n", "    context: prod-us\n    kubeconfigFrom:\n      command: [vault, read, -field=kubeconfig, secret/prod-us]\n")
	f, err := Parse([]byte(in), "fleet.yaml", "/fleet")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		cluster, path, from string
	}{
		{"staging-eu", "", "env:FLEET_KUBECONFIG"},                             // the defaults'
		{"prod-eu", "~/.kube/prod", ""},                                        // its own kubeconfig wins
		{"prod-us", "", "command:vault read -field=kubeconfig secret/prod-us"}, // its own kubeconfigFrom wins
	} {
		path, from := f.KubeconfigOf(f.Cluster(tt.cluster))
		got := ""
		if from != nil {
			got = from.String()
		}
		if path != tt.path || got != tt.from {
			t.Errorf("%s: KubeconfigOf = %q, %q; want %q, %q", tt.cluster, path, got, tt.path, tt.from)
		}
	}
	// A default kubeconfig file, with no kubeconfigFrom anywhere.
	f, err = Parse([]byte(replace("defaults:\n", "defaults:\n  kubeconfig: ~/.kube/all\n")), "fleet.yaml", "/fleet")
	if err != nil {
		t.Fatal(err)
	}
	if path, from := f.KubeconfigOf(f.Cluster("staging-eu")); path != "~/.kube/all" || from != nil {
		t.Errorf("staging-eu: KubeconfigOf = %q, %v; want the defaults' file", path, from)
	}
}

func TestDependencyOrder(t *testing.T) {
	f, err := Parse([]byte(valid+`apps:
  - {name: web, manifests: ., dependsOn: [api, db]}
  - {name: api, manifests: ., dependsOn: [db]}
  - {name: db, manifests: .}
  - {name: docs, manifests: .}
`), "fleet.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ in, want []string }{
		{[]string{"web", "api", "db", "docs"}, []string{"db", "api", "web", "docs"}},
		{[]string{"docs", "web"}, []string{"docs", "web"}}, // dependencies not in the run are not added
		{[]string{"web", "db"}, []string{"db", "web"}},
		{nil, nil},
	} {
		if got := f.DependencyOrder(tt.in); !cmp.Equal(got, tt.want) {
			t.Errorf("DependencyOrder(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string // each error, "line: field: message"
	}{
		{"unknown cluster field", replace("    context: stg-eu\n", "    contxet: stg-eu\n"),
			[]string{`fleet.yaml:16: cluster staging-eu: context: required`, `fleet.yaml:18: cluster staging-eu: contxet: unknown field "contxet" (did you mean "context"?)`}},
		{"unknown top-level field", "extra: 1\n" + valid,
			[]string{`fleet.yaml:1: extra: unknown field "extra"`}},
		{"duplicate cluster", replace("name: prod-us", "name: prod-eu"),
			[]string{`fleet.yaml:28: clusters[2].name: duplicate cluster name "prod-eu"`}},
		{"duplicate group", replace("name: production", "name: staging"),
			[]string{`fleet.yaml:12: groups[1].name: duplicate group name "staging"`, `fleet.yaml:22: cluster prod-eu: group: unknown group "production" (groups: staging, staging)`, `fleet.yaml:29: cluster prod-us: group: unknown group "production" (groups: staging, staging)`}},
		{"unknown group", replace("    group: staging\n", "    group: stagin\n"),
			[]string{`fleet.yaml:17: cluster staging-eu: group: unknown group "stagin" (groups: staging, production)`}},
		{"invalid cluster name", replace("name: staging-eu", "name: Staging_EU"),
			[]string{`fleet.yaml:16: cluster Staging_EU: name: "Staging_EU" is not a valid name`}},
		{"wrong apiVersion", replace("fleet/v1alpha1", "fleet/v2"),
			[]string{`fleet.yaml:1: apiVersion: want "fleet/v1alpha1", got "fleet/v2"`}},
		{"wrong kind", replace("kind: Fleet", "kind: Flet"),
			[]string{`fleet.yaml:2: kind: want "Fleet", got "Flet"`}},
		{"not an integer", replace("maxParallel: 2", "maxParallel: two"),
			[]string{`fleet.yaml:10: group staging: maxParallel: want a number of clusters or a percentage of the group's (3, 10%), got "two"`}},
		{"percentages", strings.Replace(replace("maxParallel: 2", "maxParallel: 150%"), "maxFailures: 0", "maxFailures: '5'", 1),
			[]string{`fleet.yaml:10: group staging: maxParallel: a percentage of the group's clusters is at most 100%, got 150%`, `fleet.yaml:11: group staging: maxFailures: want a number of clusters or a percentage of the group's (3, 10%), got "5"`}},
		{"batches", replace("    protected: true\n", "    protected: true\n    batchSoak: 1m\n    batches:\n      - selector: tier=gold\n      - size: 0\n      - {selector: 'a in (b', name: x}\n      - {size: 1, selector: a=b}\n      - {name: x, size: 10%}\n      - 2\n      - two\n"),
			[]string{`fleet.yaml:18: group production: batches[1].size: must be at least 1 (or 1%), got 0`,
				`fleet.yaml:19: group production: batches[2].selector: `,
				`fleet.yaml:20: group production: batches[3]: give a batch either a selector (canary=true) or a size (1, 10%)`,
				`fleet.yaml:21: group production: batches[4].name: duplicate batch name "x"`,
				`fleet.yaml:23: group production: batches[6].size: want a number of clusters or a percentage of the group's (3, 10%), got "two"`}},
		{"a batch selector with a typo", replace("    protected: true\n", "    protected: true\n    batches: [{name: canary, selector: canary=ture}, 50%, {selector: 'region in (eu)'}, {selector: ring=0, optional: true}]\n"),
			[]string{`fleet.yaml:15: group production: batches[0].selector: "canary=ture" matches none of group production's 2 clusters (their labels: region=eu, region=us, tier=gold): a typo? Say optional: true if the batch may be empty`}},
		{"one server twice", replace("    labels: {region: us}\n", "    labels: {region: us}\n    server: https://10.0.0.1:6443/\n    uid: 7c1c0000-0000-0000-0000-000000000000\n"),
			[]string{`fleet.yaml:32: cluster prod-us: server: server is also cluster prod-eu's (clusters[1]): two entries of one API server would share every app's records there; remove one, or say sameClusterAs: prod-eu`,
				`fleet.yaml:33: cluster prod-us: uid: uid is also cluster prod-eu's (clusters[1])`}},
		{"same as nobody", replace("    labels: {region: us}\n", "    labels: {region: us}\n    sameClusterAs: prod-as\n"),
			[]string{`fleet.yaml:32: cluster prod-us: sameClusterAs: no cluster "prod-as"`}},
		{"approval without approvers", replace("    protected: true\n", "    protected: true\n    approval: required\n"),
			[]string{`fleet.yaml:15: group production: approval: required, but the fleet has no approvers: list whose signed approvals count`}},
		{"approval's forms", replace("    protected: true\n", "    protected: true\n    approval: {required: true, expires: -1h}\n  - {name: g2, approval: {expires: 72h}}\n  - {name: g3, approval: sometimes}\n  - {name: g4, approval: {required: true, expire: 72h}}\n"),
			[]string{`fleet.yaml:15: group production: approval.expires: must not be negative, got -1h0m0s`,
				`fleet.yaml:15: group production: approval: required, but the fleet has no approvers`,
				`fleet.yaml:16: group g2: approval.expires: an expiry without required: true approves nothing: say required: true, or leave expires out`,
				`fleet.yaml:17: group g3: approval: want required, none or {required: true, expires: 72h}, got "sometimes"`,
				`fleet.yaml:18: group g4: approval.expire: unknown field "expire" (did you mean "expires"?)`,
				`fleet.yaml:18: group g4: approval: required, but the fleet has no approvers`}},
		{"approvers", replace("    protected: true\n", "    protected: true\n    approval: required\n") + "approvers:\n  - {name: alice, publicKey: MCowBQYDK2VwAyEANgtYoXgqRPuN7f9hmgVFnK+OK8zLmclS/qdmvTEXnaA=}\n  - {name: bob, publicKey: MCowBQYDK2VwAyEANgtYoXgqRPuN7f9hmgVFnK+OK8zLmclS/qdmvTEXnaA=}\n  - {name: alice, publicKey: not-a-key}\n  - {name: rsa, publicKey: MFwwDQYJKoZIhvcNAQEBBQADSwAwSAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8QuKUpRKfFLfRYC9AIKjbJTWit+CqvjWYzvQwECAwEAAQ==}\n",
			[]string{`fleet.yaml:36: approvers[1].publicKey: the same key as approver alice's: one key, one approver`,
				`fleet.yaml:37: approvers[2].name: duplicate approver "alice"`,
				`fleet.yaml:37: approvers[2].publicKey: want an Ed25519 public key, PEM or base64`,
				`fleet.yaml:38: approvers[3].publicKey: want an Ed25519 public key, got a *rsa.PublicKey`}},
		{"after", replace("    protected: true\n", "    protected: true\n    after: [production, prod, staging]\n"),
			[]string{`fleet.yaml:15: group production: after[0]: group production cannot wait for itself`, `fleet.yaml:15: group production: after[1]: no group "prod" (groups: staging, production)`}},
		{"windows", replace("    protected: true\n", "    protected: true\n    windows:\n      - {kind: allow, schedule: '0 9 * * 1-5', duration: 8h, timeZone: Europe/Berlin}\n      - {kind: maybe, schedule: 'every day', duration: 0s, timeZone: Mars/Olympus}\n      - {kind: deny, schedule: '0 0 24 12 *'}\n"),
			[]string{`fleet.yaml:17: group production: windows[1].kind: want allow or deny, got "maybe"`,
				`fleet.yaml:17: group production: windows[1].duration: must be positive, got 0s`,
				`fleet.yaml:17: group production: windows[1].schedule: want a cron expression such as '0 9 * * 1-5' (minute hour day month weekday): expected exactly 5 fields, found 2: [every day]`,
				`fleet.yaml:17: group production: windows[1].timeZone: want an IANA time zone such as Europe/Berlin: unknown time zone Mars/Olympus`,
				`fleet.yaml:18: group production: windows[2].duration: must be positive, got 0s`}},
		{"windows that never open or never end", replace("    protected: true\n", "    protected: true\n    windows:\n      - {kind: allow, schedule: '0 0 30 2 *', duration: 1h}\n      - {kind: allow, schedule: '0 0 31 4 *', duration: 1h}\n      - {kind: deny, schedule: '* * * * *', duration: 2000000h}\n      - {kind: allow, schedule: 'CRON_TZ=Asia/Tokyo 0 9 * * *', duration: 8h, timeZone: Europe/Berlin}\n      - {kind: allow, schedule: 'TZ=UTC 0 9 * * *', duration: 8h}\n      - {kind: allow, schedule: '@every 1h', duration: 8h}\n"),
			[]string{`fleet.yaml:16: group production: windows[0].schedule: want a cron expression such as '0 9 * * 1-5' (minute hour day month weekday): it never opens (no such day: the 30th of February, the 31st of April?)`,
				`fleet.yaml:17: group production: windows[1].schedule: want a cron expression such as '0 9 * * 1-5' (minute hour day month weekday): it never opens`,
				`fleet.yaml:18: group production: windows[2].duration: at most 8784h0m0s (a year), got 2000000h0m0s`,
				`fleet.yaml:19: group production: windows[3].schedule: want a cron expression such as '0 9 * * 1-5' (minute hour day month weekday): a time zone in the schedule (CRON_TZ=Asia/Tokyo) is not read: give it as the window's timeZone`,
				`fleet.yaml:20: group production: windows[4].schedule: want a cron expression such as '0 9 * * 1-5' (minute hour day month weekday): a time zone in the schedule (TZ=UTC) is not read`,
				`fleet.yaml:21: group production: windows[5].schedule: want a cron expression such as '0 9 * * 1-5' (minute hour day month weekday): @every counts from whenever it is asked`}},
		{"after cycle", replace("    maxFailures: 0\n", "    maxFailures: 0\n    after: [production]\n"),
			[]string{`fleet.yaml:12: group staging: after: groups wait for each other (after:) in a cycle: staging → production → staging`}},
		{"negative", replace("maxFailures: 0", "maxFailures: -1"),
			[]string{`fleet.yaml:11: group staging: maxFailures: must not be negative, got -1`}},
		{"not a bool", replace("protected: true", "protected: maybe"),
			[]string{`fleet.yaml:14: group production: protected: want true or false, got "maybe"`}},
		{"list for mapping", replace("labels: {region: us}", "labels: [us]"),
			[]string{`fleet.yaml:31: cluster prod-us: labels: want a mapping, got a list`}},
		{"invalid label", replace("{region: us}", "{region: 'u s'}"),
			[]string{`fleet.yaml:31: cluster prod-us: labels.region: invalid label value "u s"`}},
		{"invalid server", replace("https://10.0.0.1:6443", "10.0.0.1"),
			[]string{`fleet.yaml:26: cluster prod-eu: server: "10.0.0.1" is not a URL`}},
		{"repeated key", replace("    context: stg-eu\n", "    context: stg-eu\n    context: other\n"),
			[]string{`fleet.yaml:19: cluster staging-eu: context: field "context" appears more than once`}},
		{"missing group and context", replace("    group: staging\n    context: stg-eu\n", ""),
			[]string{`fleet.yaml:16: cluster staging-eu: group: required`, `fleet.yaml:16: cluster staging-eu: context: required`}},
		{"missing metadata name", replace("  name: acme\n", "  name: \"\"\n"),
			[]string{`fleet.yaml:4: metadata.name: required`}},
		{"ignore rules", valid + "ignoreDifferences:\n  - {group: apps, kind: Deployment, jsonPointers: [/spec/replicas, spec/x, /metadata/name]}\n  - {kind: \"\", jsonPointers: []}\n  - {kind: Foo, jsonPointer: [/a]}\n",
			[]string{`fleet.yaml:34: ignoreDifferences[0].jsonPointers[1]: "spec/x" is not a JSON pointer: it must start with /`,
				`fleet.yaml:34: ignoreDifferences[0].jsonPointers[2]: "/metadata/name": the object's identity cannot be ignored`,
				`fleet.yaml:35: ignoreDifferences[1].kind: required`, `fleet.yaml:35: ignoreDifferences[1].jsonPointers: required`,
				`fleet.yaml:36: ignoreDifferences[2].jsonPointer: unknown field "jsonPointer"`, `fleet.yaml:36: ignoreDifferences[2].jsonPointers: required`}},
		{"yaml syntax", replace("  name: acme\n", "  name: [acme\n"),
			[]string{`fleet.yaml:5: invalid YAML: did not find expected ',' or ']' (in the block that starts at line 3)`}},
		// yaml.v3 says where the block starts; the line is the problem's.
		{"yaml indentation", valid + "apps:\n  - name: web\n    helm:\n      chart: c\n      values:\n        - a.yaml\n     namespace: x\n",
			[]string{`fleet.yaml:39: invalid YAML: did not find expected key (in the block that starts at line 33)`}},
		{"yaml tab", valid + "apps:\n\t- name: web\n",
			[]string{`fleet.yaml:34: invalid YAML: found character that cannot start any token`}},
		{"empty file", "", []string{`fleet.yaml:1: the file is empty`}},
		{"two documents", valid + "---\n" + valid, []string{`fleet.yaml:33: a fleet file holds one YAML document`}},
		{"bad attributesFrom", replace("    attributes: {domain: eu.staging.acme.io}\n", "    attributesFrom:\n      - {apiVersion: v1, kind: ConfigMap, name: info, attributes: {region: '{.data.region'}}\n"),
			[]string{`fleet.yaml:21: cluster staging-eu: attributesFrom[0].attributes.region: invalid JSONPath`}},
		{"attributesFrom a Secret", replace("    attributes: {domain: eu.staging.acme.io}\n", "    attributesFrom:\n      - {apiVersion: v1, kind: Secret, name: s, attributes: {p: '{.data.p}'}}\n"),
			[]string{`fleet.yaml:21: cluster staging-eu: attributesFrom[0].kind: attributes are printed by render and diff, so they are not read from Secrets`}},
		{"app without source", valid + "apps:\n  - name: web\n",
			[]string{`fleet.yaml:34: app web: one of kustomize, jsonnet, manifests or helm is required`}},
		{"helm chart errors", valid + "apps:\n  - name: a\n    helm: {repo: https://charts.example.com}\n  - name: b\n    helm: {chart: ingress-nginx, repo: charts.example.com}\n  - name: c\n    helm: {chart: oci://ghcr.io/acme/web, releaseName: Not_Valid}\n  - name: d\n    helm: {chart: ./charts/nope, values: [values/nope.yaml, 'values/${FLEET_CLUSTER_GROUP}.yaml']}\n  - name: e\n    helm: {chart: oci://ghcr.io/acme/web, version: 1.0.0, valuesFiles: [x]}\n  - name: f\n    helm: {chart: x}\n    manifests: .\n",
			[]string{`fleet.yaml:35: app a: helm.chart: required`,
				`fleet.yaml:35: app a: helm.version: required`,
				`fleet.yaml:37: app b: helm.repo: "charts.example.com" is not an http(s) URL`,
				`fleet.yaml:37: app b: helm.version: required for a chart from a repository or registry`,
				`fleet.yaml:39: app c: helm.version: required`,
				`fleet.yaml:39: app c: helm.releaseName: "Not_Valid" is not a valid release name`,
				`fleet.yaml:41: app d: helm.chart: ./charts/nope does not exist`,
				`fleet.yaml:41: app d: helm.values[0]: values/nope.yaml does not exist`,
				`fleet.yaml:43: app e: helm.valuesFiles: unknown field "valuesFiles"`,
				`fleet.yaml:44: app f: only one of kustomize, jsonnet, manifests or helm may be set`,
				`fleet.yaml:45: app f: helm.chart: x does not exist`}},
		{"app unknown group and cluster", valid + "apps:\n  - name: web\n    manifests: .\n    groups: [prod]\n    clusters: [nope-*]\n    selector: 'a in (b'\n",
			[]string{`fleet.yaml:36: app web: groups[0]: unknown group "prod"`, `fleet.yaml:37: app web: clusters[0]: no cluster matches "nope-*"`, `fleet.yaml:38: app web: selector: invalid label selector`}},
		{"substitute on a jsonnet app", valid + "apps:\n  - name: web\n    jsonnet: .\n    substitute: false\n",
			[]string{`fleet.yaml:36: app web: substitute: only applies to a kustomize or manifests app`}},
		{"oci sources", valid + "apps:\n  - name: a\n    kustomize: oci://ghcr.io/acme/base\n  - name: b\n    manifests: oci://ghcr.io/acme/base:v1\n    path: ../../etc\n    verify: {provider: notary, key: k.pub}\n  - name: c\n    jsonnet: oci://ghcr.io/Not A/ref:v1\n    path: main.jsonnet\n  - name: d\n    manifests: .\n    path: x\n    insecure: true\n    verify: {key: k.pub}\n  - name: e\n    kustomize: oci://ghcr.io/acme/base@sha256:" + strings.Repeat("ab", 32) + "\n    verify: {}\n  - name: f\n    jsonnet: oci://ghcr.io/acme/lib:v1\n",
			[]string{`fleet.yaml:35: app a: kustomize: "oci://ghcr.io/acme/base" has no tag or digest`,
				`fleet.yaml:38: app b: path: "../../etc" must stay inside the artifact`,
				`fleet.yaml:39: app b: verify.provider: "notary" is not a provider kubectl fleet verifies with: cosign`,
				`fleet.yaml:41: app c: jsonnet: "oci://ghcr.io/Not A/ref:v1" is not an OCI reference`,
				`fleet.yaml:45: app d: path: only applies to an oci:// source`,
				`fleet.yaml:46: app d: insecure: only applies to an oci:// source`,
				`fleet.yaml:47: app d: verify: only applies to an oci:// source`,
				`fleet.yaml:50: app e: verify.key: required`,
				`fleet.yaml:51: app f: path: required for a jsonnet app from an oci:// artifact`}},
		{"createNamespace without a namespace", valid + "apps:\n  - name: web\n    manifests: .\n    createNamespace: true\n",
			[]string{`fleet.yaml:36: app web: createNamespace: needs the app's namespace: set namespace too`}},
		{"app missing folder", valid + "apps:\n  - name: web\n    kustomize: apps/nope\n",
			[]string{`fleet.yaml:35: app web: kustomize: apps/nope does not exist`}},
		{"soak and verify", replace("    maxFailures: 0\n", "    maxFailures: 0\n    soak: 10\n    verify:\n      - {name: smoke, command: [], timeout: -1m}\n      - {name: smoke, command: [./x], timeout: soon}\n"),
			[]string{`fleet.yaml:12: group staging: soak: want a duration such as 90s, 10m or 1h30m, got "10"`,
				`fleet.yaml:14: group staging: verify[0].command: required`, `fleet.yaml:14: group staging: verify[0].timeout: must not be negative, got -1m0s`,
				`fleet.yaml:15: group staging: verify[1].timeout: want a duration such as 90s, 10m or 1h30m, got "soon"`,
				`fleet.yaml:15: group staging: verify[1].name: duplicate check name "smoke"`}},
		{"analysis", replace("    maxFailures: 0\n", "    maxFailures: 0\n    analysis:\n      - name: error-rate\n        prometheus: {address: '${prometheus}', query: up, headers: {Authorization: x}}\n        successCondition: 'result <'\n      - name: error-rate\n        datadog: {query: x}\n        count: 3\n      - name: web\n        web: {url: 'https://u:p@x.example.com/', auth: {bearerTokenEnv: T, usernameEnv: U}}\n        failureCondition: '1 + 1'\n        interval: -1s\n        count: 1\n"),
			[]string{`fleet.yaml:13: group staging: analysis[0].count: required without a soak`,
				`fleet.yaml:14: group staging: analysis[0].prometheus.headers: Authorization is a credential`,
				`fleet.yaml:14: group staging: analysis[0].prometheus.address: cluster staging-eu: undefined variable ${prometheus}`,
				`fleet.yaml:15: group staging: analysis[0].successCondition: does not compile: ERROR: <input>:1:9: Syntax error`,
				`fleet.yaml:16: group staging: analysis[1].name: duplicate analysis name "error-rate"`,
				`fleet.yaml:16: group staging: analysis[1]: give a provider: prometheus {address, query} or web {url}`,
				`fleet.yaml:16: group staging: analysis[1].successCondition: required (or failureCondition)`,
				`fleet.yaml:17: group staging: analysis[1].datadog: unknown field "datadog" (fields: name, prometheus, web,`,
				`fleet.yaml:20: group staging: analysis[2].web.url: cluster staging-eu: a URL with a user or password puts a credential in the fleet file`,
				`fleet.yaml:20: group staging: analysis[2].web.auth: give one way`,
				`fleet.yaml:21: group staging: analysis[2].failureCondition: gives int, not true or false`,
				`fleet.yaml:22: group staging: analysis[2].interval: must not be negative, got -1s`}},
		{"analysis with a soak and attributes", replace("    maxFailures: 0\n", "    maxFailures: 0\n    soak: 5m\n    analysis:\n      - name: error-rate\n        prometheus: {address: 'http://${registry}:9090', query: 'x{c=\"${FLEET_CLUSTER_NAME}\",d=\"${domian}\"}', timeout: -1s}\n        successCondition: result < 0.01\n"),
			[]string{`fleet.yaml:15: group staging: analysis[0].prometheus.timeout: must not be negative`,
				`fleet.yaml:15: group staging: analysis[0].prometheus.query: cluster staging-eu: undefined variable ${domian}: did you mean ${domain}?`}},
		{"onFailure", "onFailure: undo\n" + replace("    maxFailures: 0\n", "    maxFailures: 0\n    onFailure: rolback\n"),
			[]string{`fleet.yaml:1: onFailure: "undo" is not hold or rollback`, `fleet.yaml:13: group staging: onFailure: "rolback" is not hold or rollback`}},
		{"analysis address from the cluster", replace("    maxFailures: 0\n", "    maxFailures: 0\n    attributesFrom: [{apiVersion: v1, kind: ConfigMap, name: c, attributes: {prom: '{.data.url}'}}]\n    analysis:\n      - {name: up, prometheus: {address: '${prom}', query: up}, successCondition: result == 1.0, count: 1}\n"),
			[]string{`fleet.yaml:14: group staging: analysis[0].prometheus.address: names an attribute read from the cluster (attributesFrom)`}},
		{"kubeconfig and kubeconfigFrom", replace("    kubeconfig: ~/.kube/prod\n", "    kubeconfig: ~/.kube/prod\n    kubeconfigFrom: {env: PROD_EU}\n"),
			[]string{`fleet.yaml:25: cluster prod-eu: kubeconfigFrom: only one of kubeconfig and kubeconfigFrom may be set`}},
		{"kubeconfigFrom env and command", replace("    context: prod-us\n", "    context: prod-us\n    kubeconfigFrom:\n      env: PROD_US\n      command: [vault, read]\n"),
			[]string{`fleet.yaml:31: cluster prod-us: kubeconfigFrom: only one of env and command may be set`}},
		{"kubeconfigFrom empty", replace("    context: stg-eu\n", "    context: stg-eu\n    kubeconfigFrom: {}\n"),
			[]string{`fleet.yaml:19: cluster staging-eu: kubeconfigFrom: one of env and command is required`}},
		{"kubeconfigFrom empty command", replace("    context: stg-eu\n", "    context: stg-eu\n    kubeconfigFrom:\n      command: []\n"),
			[]string{`fleet.yaml:20: cluster staging-eu: kubeconfigFrom.command: must be a non-empty list`}},
		{"kubeconfigFrom empty program", replace("    context: stg-eu\n", "    context: stg-eu\n    kubeconfigFrom:\n      command: ['', x]\n"),
			[]string{`fleet.yaml:20: cluster staging-eu: kubeconfigFrom.command: must be a non-empty list`}},
		{"kubeconfigFrom command not a list", replace("    context: stg-eu\n", "    context: stg-eu\n    kubeconfigFrom:\n      command: vault read\n"),
			[]string{`fleet.yaml:20: cluster staging-eu: kubeconfigFrom.command: want a list, got "vault read"`}},
		{"kubeconfigFrom bad env name and unknown field", replace("    context: stg-eu\n", "    context: stg-eu\n    kubeconfigFrom:\n      env: PROD-EU\n  - name: x\n    group: staging\n    context: x\n    kubeconfigFrom: {file: kc}\n"),
			[]string{`fleet.yaml:20: cluster staging-eu: kubeconfigFrom.env: "PROD-EU" is not an environment variable name`, `fleet.yaml:24: cluster x: kubeconfigFrom.file: unknown field "file"`}},
		{"kubeconfigFrom not a mapping", replace("    context: stg-eu\n", "    context: stg-eu\n    kubeconfigFrom: PROD_EU\n"),
			[]string{`fleet.yaml:19: cluster staging-eu: kubeconfigFrom: want a mapping, got "PROD_EU"`}},
		{"defaults kubeconfig and kubeconfigFrom", replace("defaults:\n", "defaults:\n  kubeconfig: ~/.kube/all\n  kubeconfigFrom: {command: []}\n"),
			[]string{`fleet.yaml:7: defaults.kubeconfigFrom: only one of kubeconfig and kubeconfigFrom may be set`, `fleet.yaml:7: defaults.kubeconfigFrom.command: must be a non-empty list`}},
		{"delivery", replace("    protected: true\n", "    protected: true\n    delivery: {oci: 'https://r.example.com/x', namespace: Flux_System, interval: -1m}\n"),
			[]string{`fleet.yaml:15: group production: delivery.oci: "https://r.example.com/x" is not an oci:// URL`, `fleet.yaml:15: group production: delivery.namespace: "Flux_System" is not a valid name`, `fleet.yaml:15: group production: delivery.interval: must not be negative`}},
		{"delivery signing", replace("    protected: true\n", "    protected: true\n    delivery: {oci: oci://r.example.com/x, signing: {}}\n  - name: edge\n    delivery: {oci: oci://r.example.com/x, signing: {key: k, keyEnv: K}}\n  - name: dark\n    delivery: {oci: oci://r.example.com/x, signing: {keyEnv: COSIGN-KEY}}\n"),
			[]string{`fleet.yaml:15: group production: delivery.signing: one of key and keyEnv is required`, `fleet.yaml:17: group edge: delivery.signing: only one of key and keyEnv may be set`, `fleet.yaml:19: group dark: delivery.signing.keyEnv: "COSIGN-KEY" is not an environment variable name`}},
		{"delivery signing key missing", replace("    protected: true\n", "    protected: true\n    delivery: {oci: oci://r.example.com/x, signing: {key: cosign.key}}\n"),
			[]string{`fleet.yaml:15: group production: delivery.signing.key: cosign.key does not exist`}},
		{"delivery typo", replace("    protected: true\n", "    protected: true\n    delivery: {oic: oci://r.example.com/x}\n"),
			[]string{`fleet.yaml:15: group production: delivery.oic: unknown field "oic" (did you mean "oci"?)`}},
		{"delivery with a tag", replace("    protected: true\n", "    protected: true\n    delivery: {oci: 'oci://r.example.com/x:v1'}\n  - name: edge\n    delivery: {oci: 'oci:///x'}\n"),
			[]string{`fleet.yaml:15: group production: delivery.oci: "oci://r.example.com/x:v1" names a tag or digest`, `fleet.yaml:17: group edge: delivery.oci: "oci:///x" names no registry`}},
		{"no context without a delivery", replace("    context: stg-eu\n", ""),
			[]string{`fleet.yaml:16: cluster staging-eu: context: required (a cluster delivered through a registry may go without one`}},
		{"no context with what reads the cluster", replace("    protected: true\n", "    protected: true\n    delivery: {oci: oci://r.example.com/x}\n    attributesFrom: [{apiVersion: v1, kind: ConfigMap, name: c, attributes: {a: '{.data.a}'}}]\n") + "  - {name: edge-1, group: production}\n  - {name: edge-2, group: staging, delivery: {oci: oci://r.example.com/x}, server: https://1.2.3.4}\n",
			[]string{`fleet.yaml:35: cluster edge-1: context: required: attributesFrom reads the cluster`, `fleet.yaml:36: cluster edge-2: context: required with a server or uid pin`}},
		{"dependencies", valid + "apps:\n  - {name: web, manifests: ., dependsOn: [db, web, nope, db]}\n  - {name: db, manifests: ., dependsOn: [cache]}\n  - {name: cache, manifests: ., dependsOn: [web], tests: nope}\n",
			[]string{`fleet.yaml:34: app web: dependsOn[1]: an app cannot depend on itself`, `fleet.yaml:34: app web: dependsOn[2]: unknown app "nope" (apps: web, db, cache)`,
				`fleet.yaml:34: app web: dependsOn[3]: "db" is listed twice`, `fleet.yaml:34: app web: dependsOn: dependency cycle: web → db → cache → web`,
				`fleet.yaml:36: app cache: tests: nope does not exist`}},
		{"notify", valid + `notify:
  - {name: ops, events: [wave.held, wave.hold], webhook: {url: "https://u:p@hooks.example.com/x"}}
  - {name: ops, webhook: {url: "https://HOOKS.SLACK.COM./services/T/B/X"}}
  - {name: teams, webhook: {urlFrom: {env: "1BAD"}, secretFrom: {file: nope.key}}}
  - {name: both, timeout: -1s, webhook: {url: "ftp://x", urlFrom: {env: HOOK}}}
  - {name: none}
  - {name: q, webhook: {url: "https://hooks.example.com/x?token=abc", secretFrom: {env: A, file: b}}}
`,
			[]string{`fleet.yaml:34: notify[0].events[1]: unknown event "wave.hold" (one of release.started, wave.started, wave.held, approval.required,`,
				`fleet.yaml:34: notify[0].webhook.url: the URL holds a credential (a user or a query): give it with urlFrom (env or file), not in the fleet file`,
				`fleet.yaml:35: notify[1].name: duplicate sink name "ops"`,
				`fleet.yaml:35: notify[1].webhook.url: a hooks.slack.com URL is a credential: give it with urlFrom`,
				`fleet.yaml:36: notify[2].webhook.urlFrom.env: "1BAD" is not an environment variable name`,
				`fleet.yaml:36: notify[2].webhook.secretFrom.file: nope.key does not exist`,
				`fleet.yaml:37: notify[3].timeout: must not be negative, got -1s`,
				`fleet.yaml:37: notify[3].webhook: only one of url and urlFrom may be set`,
				`fleet.yaml:38: notify[4]: one sink kind is required: webhook`,
				`fleet.yaml:39: notify[5].webhook.url: the URL holds a credential`,
				`fleet.yaml:39: notify[5].webhook.secretFrom: only one of env and file may be set`}},
		{"slack", valid + `notify:
  - {name: chat, slack: {channel: "", apiURL: "https://x.example.com/api?token=1"}}
  - {name: both, webhook: {url: "https://h.example.com"}, slack: {channel: C1, tokenFrom: {env: SLACK_BOT_TOKEN}}}
  - {name: plain, slack: {channel: C1, tokenFrom: {env: SLACK_BOT_TOKEN}, apiURL: "http://slack-proxy.example.com/api/"}}
`,
			[]string{`fleet.yaml:34: notify[0].slack.channel: required`, `fleet.yaml:34: notify[0].slack.tokenFrom: required: the environment variable or file of a bot token, never the token`,
				`fleet.yaml:34: notify[0].slack.apiURL: the URL holds a credential`, `fleet.yaml:35: notify[1]: only one sink kind may be set: webhook, slack, github or teams`,
				`fleet.yaml:36: notify[2].slack.apiURL: the token is sent there: want https (http only on loopback), got http://slack-proxy.example.com`}},
		{"github", valid + `notify:
  - {name: commits, github: {repository: acme, perCluster: -1}}
`,
			[]string{`fleet.yaml:34: notify[0].github.repository: "acme" is not owner/name`, `fleet.yaml:34: notify[0].github.tokenFrom: required: the environment variable or file of a token (GITHUB_TOKEN), never the token`,
				`fleet.yaml:34: notify[0].github.perCluster: must not be negative, got -1`}},
		{"teams", valid + `notify:
  - {name: chat, teams: {}}
`,
			[]string{`fleet.yaml:34: notify[0].teams.urlFrom: required: a Workflows webhook's URL is a credential`}},
		{"a group's notify", replace("    protected: true\n", "    protected: true\n    notify: [{name: prod, events: [release.done], webhook: {url: 'https://h.example.com'}}]\n"),
			[]string{`fleet.yaml:15: group production: notify[0].events[0]: unknown event "release.done"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.in), "fleet.yaml", t.TempDir())
			if err == nil {
				t.Fatal("no error")
			}
			list, ok := err.(ErrorList)
			if !ok {
				t.Fatalf("error %T is not an ErrorList: %v", err, err)
			}
			if len(list) != len(tt.want) {
				t.Fatalf("got %d errors, want %d:\n%v", len(list), len(tt.want), err)
			}
			for i, want := range tt.want {
				if got := list[i].Error(); !strings.HasPrefix(got, want) {
					t.Errorf("error %d:\n got %s\nwant %s…", i, got, want)
				}
			}
		})
	}
}

func TestDeliveryOf(t *testing.T) {
	in := strings.Replace(valid, "    protected: true\n", "    protected: true\n    delivery: {oci: oci://r.example.com/fleets/acme, insecure: true}\n", 1) +
		"  - {name: edge-1, group: production}\n  - {name: edge-2, group: staging, delivery: {oci: 'oci://localhost:5000/edge/'}}\n"
	f, err := Parse([]byte(in), "fleet.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		cluster, oci string
		observed     bool
	}{
		{"staging-eu", "", true},
		{"prod-eu", "oci://r.example.com/fleets/acme", true},
		{"edge-1", "oci://r.example.com/fleets/acme", false},
		{"edge-2", "oci://localhost:5000/edge/", false},
	} {
		c := f.Cluster(tt.cluster)
		d := f.DeliveryOf(c)
		got := ""
		if d != nil {
			got = d.OCI
		}
		if got != tt.oci || c.Observed() != tt.observed {
			t.Errorf("%s: delivery %q observed %v, want %q %v", tt.cluster, got, c.Observed(), tt.oci, tt.observed)
		}
	}
}

func TestLocate(t *testing.T) {
	t.Setenv(EnvVar, "")
	if got := Locate(""); got != DefaultFile {
		t.Errorf("Locate() = %q, want %q", got, DefaultFile)
	}
	t.Setenv(EnvVar, "/env/fleet.yaml")
	if got := Locate(""); got != "/env/fleet.yaml" {
		t.Errorf("Locate() with $%s = %q", EnvVar, got)
	}
	if got := Locate("flag.yaml"); got != "flag.yaml" {
		t.Errorf("Locate(flag) = %q", got)
	}
}

func TestLoadMissing(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "fleet.yaml"))
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("want a not-found error, got %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(valid))
	f.Add([]byte(replace("    context: stg-eu\n", "    contxet: stg-eu\n")))
	f.Add([]byte("a: &x [*x]\n"))
	f.Add([]byte("clusters: {a: b}\n"))
	f.Add([]byte("groups:\n- name: a\n  attributes: {<<: {x: 1}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fl, err := Parse(data, "fleet.yaml", "/fleet")
		if err == nil {
			for i := range fl.Clusters {
				_ = fl.Attributes(&fl.Clusters[i])
			}
			_, _ = fl.Select(Selection{})
		}
	})
}

// TestSameClusterAs: two entries of one API server are accepted when one
// says it is the other.
func TestSameClusterAs(t *testing.T) {
	in := replace("    labels: {region: us}\n", "    labels: {region: us}\n    server: https://10.0.0.1:6443\n    uid: 7c1c0000-0000-0000-0000-000000000000\n    sameClusterAs: prod-eu\n")
	f, err := Parse([]byte(in), "fleet.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !f.SameCluster(f.Cluster("prod-us"), f.Cluster("prod-eu")) || f.SameCluster(f.Cluster("prod-us"), f.Cluster("staging-eu")) {
		t.Error("SameCluster does not follow sameClusterAs")
	}
}
