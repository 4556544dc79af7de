// Package history is what "kubectl fleet history" reads and prints:
// each app's revisions on each cluster, the current one marked, a
// revision stored for an apply that never finished said unverified.
package history

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/pause"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollback"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// Entry is the JSON and YAML form of one revision of an app on a
// cluster.
type Entry struct {
	Type    string `json:"type"`
	Cluster string `json:"cluster"`
	Group   string `json:"group"`
	Current bool   `json:"current"`
	revision.Revision
}

// Delivered is what a cluster delivered through a registry answers
// history (package target/registry): its revisions and its pauses, kept
// beside its tags.
type Delivered interface {
	History(ctx context.Context, c *fleet.Cluster, apps []string) ([]Entry, error)
	Pauses(ctx context.Context, c *fleet.Cluster) ([]pause.Pause, error)
}

// Read reads the revisions of apps (none: every app of f with
// revisions) on every cluster, parallel at once, and returns each
// cluster's outcome and entries; a delivered cluster asks delivered.
func Read(ctx context.Context, conn kube.Connector, delivered Delivered, f *fleet.Fleet, clusters []*fleet.Cluster, apps []string, parallel int) ([]runner.Outcome, map[string][]Entry, map[string][]pause.Pause) {
	var (
		mu      sync.Mutex
		entries = map[string][]Entry{}
		pauses  = map[string][]pause.Pause{}
	)
	outcomes := kube.EachTarget(ctx, conn, f, clusters, parallel, kube.Reach{Written: func(ctx context.Context, c *fleet.Cluster, client *kube.Client) error {
		// The pauses are read beside the sets, not before them.
		var (
			paused []pause.Pause
			perr   error
			wg     sync.WaitGroup
		)
		wg.Go(func() { paused, perr = pause.Read(ctx, client, f.Metadata.Name) })
		sets, err := rollback.AppSets(ctx, client, f.Metadata.Name, apps)
		wg.Wait()
		if err = cmp.Or(err, perr); err != nil {
			return err
		}
		mu.Lock()
		pauses[c.Name] = paused
		mu.Unlock()
		for _, set := range sets {
			list, err := revision.List(ctx, client, set.App)
			if err != nil {
				return err
			}
			mu.Lock()
			for _, r := range list {
				if set.Revision > 0 && r.Number > set.Revision {
					// Stored while its objects were applied, never named
					// current: whatever it carries, it is no release.
					r.Verification = revision.Verification{State: revision.Unverified, Reason: "its apply did not finish"}
				}
				entries[c.Name] = append(entries[c.Name], Entry{Type: "revision", Cluster: c.Name, Group: c.Group, Current: r.Number == set.Revision, Revision: r})
			}
			mu.Unlock()
		}
		return nil
	}, Delivered: func(ctx context.Context, c *fleet.Cluster) error {
		list, err := delivered.History(ctx, c, apps)
		paused, perr := delivered.Pauses(ctx, c)
		mu.Lock()
		entries[c.Name], pauses[c.Name] = append(entries[c.Name], list...), paused
		mu.Unlock()
		return cmp.Or(err, perr)
	}})
	return outcomes, entries, pauses
}

// WriteTable writes entries as a table to w, or says on errOut that
// there are none.
func WriteTable(w, errOut io.Writer, all []Entry) error {
	if len(all) == 0 {
		fmt.Fprintln(errOut, "No revisions found.")
		return nil
	}
	tw := printers.GetNewTabWriter(w)
	// A CHART column when a revision came from a Helm chart.
	charts := slices.ContainsFunc(all, func(e Entry) bool { return e.Chart != "" })
	chart := func(e Entry) string {
		if !charts {
			return ""
		}
		return dash(e.Chart) + "\t"
	}
	header := "CLUSTER\tAPP\tREVISION\tSTATE\tUPDATED\tBY\tSOURCE\tOBJECTS\tDIGEST\tDESCRIPTION"
	if charts {
		header = strings.Replace(header, "SOURCE\t", "SOURCE\tCHART\t", 1)
	}
	fmt.Fprintln(tw, header)
	for _, e := range all {
		n := strconv.Itoa(e.Number)
		if e.Current {
			n += " (current)"
		}
		objects := strconv.Itoa(e.Objects)
		if e.NotStored != "" {
			objects += " (not stored)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s%s\t%s\t%s\n", e.Cluster, e.App, n, e.Verification, e.Time.Local().Format(time.DateTime), dash(e.User), dash(e.Source.String()), chart(e), objects, revision.ShortDigest(e.Digest), e.Description)
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
