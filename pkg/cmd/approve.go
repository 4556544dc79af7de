package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/approval"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/summary"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/target/registry"
)

// ApproveOptions are the options of "kubectl fleet approve".
type ApproveOptions struct {
	*GlobalOptions
	SelectOptions
	SourceOptions
	Parallel int
	// Key is --key: the approver's private key.
	Key string
}

// ApproverKeyEnv names the approver's private key when --key does not.
const ApproverKeyEnv = approval.KeyEnv

// NewCmdApprove returns the approve command.
func NewCmdApprove(g *GlobalOptions) *cobra.Command {
	o := &ApproveOptions{GlobalOptions: g}
	cmd := &cobra.Command{
		Use:   "approve",
		Short: "Approve the release each selected cluster would get, for groups marked approval: required",
		Long: `Render every selected cluster (the same source flags as the apply to approve)
and record in each (a ConfigMap approval.<fleet> in the namespace
kubectl-fleet) that the user, as the cluster authenticates them, approved
that render of each app: its digest, under the cluster's digest key,
signed with an approver's Ed25519 key (--key, else $KUBECTL_FLEET_APPROVER_KEY)
whose public key the fleet file lists under approvers:. The job that applies
holds no approver's key: it cannot approve its own release, whatever it may
write in the clusters; an approval no approver's key verifies, or given by
the identity that applies, does not count.

A rollout to a group marked approval: required starts only when every one of
its clusters has an approval of exactly what the rollout renders for it;
otherwise it stops before the group, exits 4 and says what to approve. A
different render needs a new approval. In CI: a plan job (diff --out), an
approve job behind a protected environment, an apply job.

Exit codes:
  0    every selected cluster approved
  1    a cluster could not be approved, or an error
  130  interrupted (Ctrl-C)`,
		Example: `  kubectl fleet approve -g production --key ~/.config/fleet/alice.pem
  KUBECTL_FLEET_APPROVER_KEY=alice.pem kubectl fleet approve -g production -k overlays

  # An approver's key, and the public key to list under approvers:
  openssl genpkey -algorithm ed25519 -out alice.pem
  openssl pkey -in alice.pem -pubout`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Parallel < 1 {
				return fmt.Errorf("--parallel must be at least 1")
			}
			if err := o.SourceOptions.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	o.SelectOptions.addFlags(cmd, g)
	o.SourceOptions.addFlags(cmd, g)
	cmd.Flags().IntVar(&o.Parallel, "parallel", 10, "clusters worked on at once")
	cmd.Flags().StringVar(&o.Key, "key", "", "the approver's Ed25519 private key, PEM (default $"+ApproverKeyEnv+")")
	return cmd
}

// Run renders and approves.
func (o *ApproveOptions) Run(ctx context.Context) error {
	// The key first: without one, nothing is rendered or asked.
	f, err := o.loadFleet()
	if err != nil {
		return err
	}
	signer, err := approval.SignerFor(o.Key, f.Approvers)
	if err != nil {
		return err
	}
	r, err := o.render(ctx, o.Selection, &o.SourceOptions, true)
	if err != nil {
		return err
	}
	outcomes, approved := approval.Fleet(ctx, connector{o.GlobalOptions}, registry.Of(r.Fleet), r, o.Parallel, time.Now(), signer)
	p := o.newPrinter(r.Clusters, false)
	failed := summary.Each(p.Out, p.Prefix, outcomes, func(oc runner.Outcome) string { return approval.Said(approved[oc.Cluster]) }, "error")
	return summary.Verdict(ctx, failed, len(outcomes), "not approved")
}
