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
	"github.com/kubectl-fleet/kubectl-fleet/pkg/trace"
)

// notifyGrace is how long a run's end waits for its sinks to send what
// is queued, Ctrl-C included (a run killed mid-way sends what it can on
// its way out).
const notifyGrace = 10 * time.Second

// notification is a release told to the fleet file's sinks (its
// Notifier, and the Recorder of its rollout) and recorded as a trace.
type notification struct {
	n   *notify.Notifier
	rec *notify.Recorder
	tr  *trace.Release
}

// notifier starts the sinks of f's notify: lists for a release of verb
// (nil when it has none, and for a dry run: a dry run is no release). A
// credential that cannot be read fails the run before anything is
// written.
func (g *GlobalOptions) notifier(f *fleet.Fleet, dryRun bool) (*notify.Notifier, error) {
	if dryRun {
		return nil, nil
	}
	targets, err := g.notifyTargets(f)
	if err != nil || len(targets) == 0 {
		return nil, err
	}
	return notify.New(targets, func(w string) { fmt.Fprintln(g.ErrOut, "Warning: "+w) }), nil
}

// notifyTargets are f's sinks, with the credentials they read masked
// wherever the run prints, and a client that follows no redirect (a POST
// redirected is a GET without its body, whose 2xx would read as
// delivery).
func (g *GlobalOptions) notifyTargets(f *fleet.Fleet) ([]notify.Target, error) {
	client := &http.Client{Transport: http.DefaultTransport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return notify.TargetsOf(f, client, func(secret string) {
		if g.mask != nil {
			g.mask.Add(secret)
		}
	})
}

// record is the notification of a rollout of r by verb: to n's sinks
// (none when n is nil), masking what the run decrypted, and as a trace
// when the environment asks for one; nil when neither.
func (g *GlobalOptions) record(ctx context.Context, n *notify.Notifier, r *rendered.Set, verb string) *notification {
	id := releaseID()
	tr := g.trace(r, id, verb)
	if n == nil && tr == nil {
		return nil
	}
	out := &notification{n: n, tr: tr}
	if n == nil {
		return out
	}
	release := notify.Release{ID: id, Verb: verb, Repository: os.Getenv("GITHUB_REPOSITORY")}
	src := revision.SourceOf(ctx, r.Fleet.Dir)
	release.Commit, release.Dirty = src.Commit, src.Dirty
	out.rec = notify.NewRecorder(r.Fleet.Metadata.Name, release, rollout.Waves(r.Fleet, r.Clusters), n.Notify)
	out.rec.TraceID = tr.TraceID()
	if g.mask != nil {
		out.rec.Mask = g.mask.String
	}
	return out
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

// trace is the notification's trace, nil without one.
func (n *notification) trace() *trace.Release {
	if n == nil {
		return nil
	}
	return n.tr
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
