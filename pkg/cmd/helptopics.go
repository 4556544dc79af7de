package cmd

import (
	"fmt"

	"github.com/spf13/cobra"
)

// DocsURL is where the guides of docs/ are published.
const DocsURL = "https://github.com/kubectl-fleet/kubectl-fleet/blob/main/docs/"

// HelpTopic is a guide of docs/ that "kubectl fleet help NAME" points to.
type HelpTopic struct {
	// Name is the topic, as typed after "kubectl fleet help".
	Name string
	// Page is the guide's file in docs/.
	Page string
	// Short is the line "kubectl fleet --help" shows for it.
	Short string
	// Summary is a few lines on what the guide says.
	Summary string
}

// HelpTopics are the additional help topics. A topic must not take the
// name of a command: "kubectl fleet help reconcile" is the command's own
// help, so the guide of continuous mode is the topic "continuous".
var HelpTopics = []HelpTopic{
	{"fleet-file", "fleet-file.md", "The fleet file: every field, its type, default and an example", `The fleet file (--fleet/-F, else $KUBECTL_FLEET, else ./fleet.yaml) names
the clusters, puts them in ordered groups (staging before production), gives
each cluster attributes (defaults < group < cluster) and may name the apps.
Relative paths in it start at its own folder. It is read strictly: unknown
fields, duplicate names, unknown groups and missing contexts are errors with
file, line and field, before anything touches a cluster.`},
	{"rendering", "rendering.md", "Rendering: kustomize, jsonnet, manifests, Helm charts and ${var} substitution", `Every selected cluster's manifests are rendered in process from kustomize
(-k), jsonnet (-j), plain manifests (-f) or a Helm chart (--chart, or the
fleet file's apps) with the cluster's attributes: jsonnet gets the cluster
as the top-level argument and external variable "cluster"; kustomize,
manifests and Helm values get ${var}, ${var:=default} and $${var}.
"kubectl fleet render" prints the result; "deps update" pins Helm charts.`},
	{"rollouts", "rollouts.md", "Rollouts: groups, gates, the promotion rule and release states", `"kubectl fleet apply" goes group by group in fleet-file order, each group's
maxParallel clusters at once, stopping once more than maxFailures failed.
Gates prove a release on each cluster: health, the apps' tests, the group's
verify checks and its soak. Each revision records its verdict (verified,
failed, unverified), and a later group only gets a release every earlier
group runs verified, in this run and the next.`},
	{"progressive", "progressive.md", "Progressive delivery: batches inside a group, percentages, independent tracks", `A group can roll out in batches (groups[].batches: a canary by label, then
sizes such as 1%, 10%, 100%), each a wave of its own that the promotion rule
holds until the batches before it verified the release, across runs and
reconcile passes. maxParallel and maxFailures take percentages of the group.
after: makes the groups a graph: independent tracks (eu, us) where a failure
holds only what comes after it in its track. windows: (allow or deny, a cron
schedule, a duration, a time zone) keep writes to a group inside its deploy
windows; --ignore-windows for an emergency. pause/resume hold rollouts in the
clusters themselves; approval: required and approve bind a human's approval
to one release.`},
	{"secrets", "secrets.md", "Secrets in the repository: SOPS-encrypted files", `Files encrypted with SOPS (age, SSH, PGP, AWS KMS, GCP KMS, Azure Key Vault,
Vault transit) are decrypted in memory as a render reads them, with the keys
the sops CLI would find: kustomize resources and generator inputs, manifests,
Helm values files, jsonnet imports. Each file once per run, never written
back, its MAC checked. Values are masked wherever Secrets are; without the
keys vet and render still work and say so, diff and apply refuse before any
write. render --output-dir leaves encrypted Secret manifests encrypted for
Flux unless --decrypt.`},
	{"revisions", "revisions.md", "Revisions, history and rollback", `Every apply that changes an app's render records a revision in the cluster
(Secrets in the kubectl-fleet namespace): who, when, the source commit, the
render's digest and the objects. "kubectl fleet history" lists them,
"kubectl fleet rollback" re-applies one, and "apply --atomic" puts a failed
cluster back the way it was.`},
	{"delivery", "delivery.md", "Clusters you cannot reach: publish to a registry, roll out through Flux", `A group or cluster with delivery: {oci: oci://…} is never written to:
apply publishes each app's render for it as a signed Flux OCI artifact, moves
the cluster's tag <app>:<cluster> when its wave starts, and, through a
read-only context, waits until its Flux applied exactly that digest. Gates,
approvals, windows, history, rollback and delete work as for any cluster;
"kubectl fleet bootstrap" writes what makes a cluster follow its tags.`},
	{"ci", "ci.md", "CI: locks, plans, reports, the GitHub Action, least privilege", `Locks keep one writer per app and cluster ("kubectl fleet unlock" removes a
stale one). "diff --out plan.json" writes a plan, and "apply --plan" applies
exactly what was reviewed or refuses. --report writes markdown or JUnit.
The guide has a complete GitHub Actions workflow whose pull-request job can
only dry-run.`},
	{"continuous", "reconcile.md", "Continuous mode: the reconcile command, drift, metrics, running it in a cluster", `"kubectl fleet reconcile" is apply again and again for what changed: each
pass renders again, checks every selected cluster, and applies only those
whose render changed, whose revision is not verified, that could not be
checked, or (--correct-drift) that drifted. Prometheus metrics and /healthz with --metrics-addr; --once
for a CronJob.`},
	{"security", "security.md", "Security model and guarantees, and the tests that hold them", `Identity pins refuse a context that moved; no Secret value or credential
appears in any output, log or error; checks reach their own cluster only;
locks, plans and the promotion rule keep runs apart and in order. Each
promise names the tests that hold it.`},
	{"troubleshooting", "troubleshooting.md", "Common errors and what to do about them", `The errors people meet first: a fleet file that does not load, a context
missing from the kubeconfig, a selection that matches nothing, an undefined
${var}, an identity mismatch, a lock held by another run, a stale plan, a
protected group without a terminal, a group held back by the promotion rule.`},
	{"notify", "events.md", "Events: a release told to webhooks (CloudEvents), Slack and GitHub", `The fleet file's notify: sends a release's events (release started, wave
started, held or finished, cluster failed, approval required, rollback,
release finished) to webhooks as signed CloudEvents, to Slack as one
message per release edited as it moves, and to GitHub as commit statuses,
deployments and a pull request comment; per release and wave, never per
object. A sink that fails costs the run a bounded time and one
warning; required: true makes a missed event exit 7.`},
	{"output", "output.md", "Output and exit codes", `Lines about a cluster start with [cluster]; data goes to stdout, progress
and errors to stderr; -o json prints one object per line. Exit codes: 0
success, 1 an error or a failed cluster (diff: differences), 2 an error in
diff, 3 done except for unreachable clusters skipped, 130 interrupted.`},
	{"benchmarks", "benchmarks.md", "Benchmarks: what make bench measures", `"make bench" times kubectl fleet against the loops users write
(kustomize build | envsubst | kubectl apply, sequential and parallel) and a
minimal apply client on 10 clusters 50 ms away, and renders of 100 and 1,000
clusters; the results go to bench/RESULTS.md.`},
}

// addHelpTopics adds the help topics to root: commands without Run that
// cobra lists under "Additional help topics" and "kubectl fleet help NAME"
// prints.
func addHelpTopics(root *cobra.Command) {
	for _, t := range HelpTopics {
		root.AddCommand(&cobra.Command{
			Use:   t.Name,
			Short: t.Short,
			Long:  fmt.Sprintf("%s\n\n%s\n\nThe guide: %s%s\n(docs/%s in the source tree)", t.Short, t.Summary, DocsURL, t.Page, t.Page),
		})
	}
}
