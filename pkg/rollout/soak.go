package rollout

import (
	"context"
	"fmt"
	"sync"
	"time"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// defaultSoakInterval is how often a soak reads the objects.
const defaultSoakInterval = 5 * time.Second

// soakRun watches clusters that went through their group for a while: every
// Interval each cluster's Health must hold, until Duration has passed. It
// is a group's gate: a cluster whose objects go unhealthy fails, and its
// verdict (Gates) says so.
type soakRun struct {
	Duration time.Duration
	// Interval between two looks (0: defaultSoakInterval).
	Interval time.Duration
	// Health returns an error for the first object of cluster that is
	// gone or no longer healthy.
	Health func(ctx context.Context, cluster string) error
	// Gates returns the gates of a cluster, told how its soak went.
	Gates func(cluster string) *gateSet
	// Emit gets the soak's events; Stage, if set, the progress of each
	// cluster ("soak, 12s left").
	Emit  Sink
	Stage func(cluster, stage string)
	// Ended, if set, is called once a cluster's soak passed (err nil) or
	// failed, after its gates were told, with the cluster's Writes: what
	// it returns is the cluster's error (a failure after a rollback says
	// so). It is not called when ctx ends first (Ctrl-C). A lock lost
	// during the soak stops it, and Ended is told with its Writes ended
	// (lostLock): nothing may be written then, a verdict or a restore.
	Ended func(ctx context.Context, cluster string, err error) error
	// Writes, if set, is the context of a cluster's writes, which ends
	// when a lock of the cluster is lost (Locks.Writes): the soak and
	// Ended go on in it.
	Writes func(ctx context.Context, cluster string) context.Context
	// Release, if set, is called with Run's ctx once a cluster's soak is
	// over, Ended's work included: nothing more is written there.
	Release func(ctx context.Context, cluster string)
}

// Run soaks the clusters at once and returns the error of each that
// failed, or was interrupted (ctx done) before the end.
func (s soakRun) Run(ctx context.Context, clusters []string) map[string]error {
	var (
		mu   sync.Mutex
		errs = map[string]error{}
		wg   sync.WaitGroup
	)
	end := time.Now().Add(s.Duration)
	for _, name := range clusters {
		wg.Go(func() {
			if err := s.one(ctx, name, end); err != nil {
				mu.Lock()
				errs[name] = err
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errs
}

// one soaks one cluster until end.
func (s soakRun) one(ctx context.Context, cluster string, end time.Time) error {
	interval := s.Interval
	if interval <= 0 {
		interval = defaultSoakInterval
	}
	run := ctx
	if s.Release != nil {
		defer s.Release(run, cluster)
	}
	if s.Writes != nil {
		ctx = s.Writes(ctx, cluster)
	}
	s.Emit(SoakEvent{Type: typeSoak, Cluster: cluster, State: "started", Left: s.Duration.Seconds()})
	next := time.Now()
	for {
		if s.Stage != nil {
			s.Stage(cluster, fmt.Sprintf("soak, %s left", time.Until(end).Round(time.Second)))
		}
		if err := s.Health(ctx, cluster); err != nil {
			if ctx.Err() != nil {
				return s.stopped(run, ctx, cluster, end)
			}
			s.Emit(SoakEvent{Type: typeSoak, Cluster: cluster, State: "failed", Left: time.Until(end).Seconds(), Error: err.Error()})
			s.Gates(cluster).Fail("", "soak: "+oneLine(err))
			return s.ended(ctx, cluster, fmt.Errorf("soak: %w", err))
		}
		if !time.Now().Before(end) {
			s.Emit(SoakEvent{Type: typeSoak, Cluster: cluster, State: "passed"})
			s.Gates(cluster).Pass("", "soak "+s.Duration.String())
			return s.ended(ctx, cluster, nil)
		}
		next = next.Add(interval)
		select {
		case <-ctx.Done():
			return s.stopped(run, ctx, cluster, end)
		case <-time.After(min(time.Until(next), time.Until(end))):
		}
	}
}

// stopped is the error of a soak whose context ended before its end:
// Ctrl-C (run ended), or a lock of the cluster lost. That is said, the
// release left unverified, and Ended told, whose writes (the verdict, an
// --atomic restore) cannot happen: it says what was not done.
func (s soakRun) stopped(run, ctx context.Context, cluster string, end time.Time) error {
	left := time.Until(end)
	lost := lostLock(ctx)
	if lost == nil || run.Err() != nil {
		return fmt.Errorf("soak interrupted with %s left", left.Round(time.Second))
	}
	s.Emit(SoakEvent{Type: typeSoak, Cluster: cluster, State: "failed", Left: left.Seconds(), Error: lost.Error()})
	s.Gates(cluster).Unverified("", "soak stopped: "+oneLine(lost))
	return s.ended(ctx, cluster, fmt.Errorf("soak stopped with %s left: %w", left.Round(time.Second), lost))
}

func (s soakRun) ended(ctx context.Context, cluster string, err error) error {
	if s.Ended == nil {
		return err
	}
	return s.Ended(ctx, cluster, err)
}

// soaks are the soaks of the waves whose group has one: after the group
// succeeded, its applied objects are watched that long (Soak), and an
// object that is no longer healthy fails its cluster (and so, by the
// group's budget, the rollout; --atomic rolls it back). The last group
// soaks too: nothing follows it, but its verdict, --atomic and the exit
// code wait for the soak. A cluster's locks cover its soak, verdict and
// restore (its Writes, Locks.Writes), and go once its soak is over: a
// lock lost meanwhile stops the soak, and nothing is recorded or
// restored there.
func (e *Engine) soaks(ws []runner.Wave) map[string]soakRun {
	out := map[string]soakRun{}
	for i := range ws {
		g := e.r.Fleet.Group(ws[i].Group)
		if g == nil {
			continue
		}
		d := g.Soak // after the group's last wave
		if i+1 < len(ws) && ws[i+1].Group == g.Name && g.BatchSoak > 0 {
			d = g.BatchSoak // after a batch another follows
		}
		if d <= 0 {
			continue
		}
		out[ws[i].Name] = soakRun{
			Duration: d, Interval: e.o.SoakInterval,
			Health:  e.soakCheck,
			Gates:   e.gatesOf,
			Emit:    e.emit,
			Stage:   func(cluster, stage string) { e.emit(StageEvent{Cluster: cluster, Stage: stage}) },
			Ended:   e.end,
			Writes:  e.Locks.Writes,
			Release: e.release,
		}
	}
	return out
}

// soakCheck reads every object applied to a cluster and returns an error
// for the first one that is not healthy; a cluster it cannot read passes,
// unverified (published).
func (e *Engine) soakCheck(ctx context.Context, name string) error {
	if !e.runOf(name).target.observed() {
		return nil // published, not observed: its verdict says so
	}
	client, err := e.connect(ctx, name)
	if err != nil {
		return err
	}
	for _, res := range e.r.Of(name) {
		for _, obj := range res.Objects {
			obj = obj.DeepCopy()
			h, err := apply.Health(context.WithoutCancel(ctx), client, obj)
			switch {
			case apierrors.IsNotFound(err):
				return fmt.Errorf("%s is gone", object.Ref(obj))
			case err != nil:
				return fmt.Errorf("%s: %w", object.Ref(obj), err)
			case h.Status != kstatus.CurrentStatus:
				return fmt.Errorf("%s is %s: %s", object.Ref(obj), h.Status, h.Message)
			}
		}
	}
	return nil
}
