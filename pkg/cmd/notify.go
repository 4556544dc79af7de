package cmd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/exit"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/notify"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rendered"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
)

// notifyGrace is how long a run's end waits for its sinks to send what
// is queued, Ctrl-C included (a run killed mid-way sends what it can on
// its way out).
const notifyGrace = 10 * time.Second

// notification is a release told to the fleet file's sinks: its
// Notifier, and the Recorder of its rollout.
type notification struct {
	n   *notify.Notifier
	rec *notify.Recorder
}

// notifier starts the sinks of f's notify: lists for a release of verb
// (nil when it has none, and for a dry run: a dry run is no release). A
// credential that cannot be read fails the run before anything is
// written.
func (g *GlobalOptions) notifier(f *fleet.Fleet, dryRun bool) (*notify.Notifier, error) {
	if dryRun {
		return nil, nil
	}
	targets, err := notify.TargetsOf(f, &http.Client{Transport: http.DefaultTransport})
	if err != nil || len(targets) == 0 {
		return nil, err
	}
	return notify.New(targets, func(w string) { fmt.Fprintln(g.ErrOut, "Warning: "+w) }), nil
}

// record is the notification of a rollout of r by verb through n (nil
// when n is), masking what the run decrypted.
func (g *GlobalOptions) record(ctx context.Context, n *notify.Notifier, r *rendered.Set, verb string) *notification {
	if n == nil {
		return nil
	}
	release := notify.Release{ID: releaseID(), Verb: verb, Repository: os.Getenv("GITHUB_REPOSITORY")}
	src := revision.SourceOf(ctx, r.Fleet.Dir)
	release.Commit, release.Dirty = src.Commit, src.Dirty
	rec := notify.NewRecorder(r.Fleet.Metadata.Name, release, rollout.Waves(r.Fleet, r.Clusters), n.Notify)
	if g.mask != nil {
		rec.Mask = g.mask.String
	}
	return &notification{n: n, rec: rec}
}

// releaseID names a release: when it started, and 6 random bytes.
func releaseID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b)
}

// recorder is the notification's Recorder, nil without one.
func (n *notification) recorder() *notify.Recorder {
	if n == nil {
		return nil
	}
	return n.rec
}

// closeNotifier sends what n still holds (within notifyGrace, whatever
// ctx says) and returns the command's error: err, or, when err is nil
// and a required sink missed an event, exit.Unnotified.
func closeNotifier(n *notify.Notifier, err error) error {
	if n == nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), notifyGrace)
	defer cancel()
	nerr := n.Close(ctx)
	if nerr == nil || err != nil {
		return err
	}
	if errors.Is(nerr, notify.ErrRequired) {
		return &exit.Error{Code: exit.Unnotified, Err: nerr}
	}
	return nerr
}
