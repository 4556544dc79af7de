package rollout

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/analysis"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/apply"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
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
	// Analyses, if set, are a cluster's analyses, measured beside its
	// health: the soak lasts until each passed (Duration at least), and
	// ends as one fails.
	Analyses func(cluster string) ([]*analysis.Analysis, error)
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

// one soaks one cluster until end, and until its analyses are over.
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
	actx, cancel := context.WithCancel(ctx) // the analyses end with the soak
	defer cancel()
	list, err := s.analysesOf(cluster)
	s.Emit(SoakEvent{Type: typeSoak, Cluster: cluster, State: "started", Left: s.Duration.Seconds(), Analyses: len(list)})
	if err != nil {
		return s.failed(ctx, cluster, end, err)
	}
	analysed, pending := s.analyse(actx, cluster, end, list)
	next := time.Now()
	for {
		over := pending == 0 && !time.Now().Before(end)
		if over || !time.Now().Before(next) { // a look every interval, and a last one
			if s.Stage != nil {
				s.Stage(cluster, s.stage(end, pending))
			}
			if err := s.Health(ctx, cluster); err != nil {
				if ctx.Err() != nil {
					return s.stopped(run, ctx, cluster, end)
				}
				return s.failed(ctx, cluster, end, err)
			}
			next = next.Add(interval)
		}
		if over {
			s.Emit(SoakEvent{Type: typeSoak, Cluster: cluster, State: "passed"})
			if s.Duration > 0 {
				s.Gates(cluster).Pass("", "soak "+s.Duration.String())
			}
			return s.ended(ctx, cluster, nil)
		}
		d := time.Until(next)
		if pending == 0 {
			d = min(d, time.Until(end))
		}
		timer := time.NewTimer(max(0, d))
		select {
		case <-ctx.Done():
			timer.Stop()
			return s.stopped(run, ctx, cluster, end)
		case err := <-analysed:
			if err != nil && ctx.Err() == nil {
				timer.Stop()
				return s.failed(ctx, cluster, end, err)
			}
			pending--
		case <-timer.C:
		}
		timer.Stop()
	}
}

// analysesOf are the cluster's analyses (none when the soak has none).
func (s soakRun) analysesOf(cluster string) ([]*analysis.Analysis, error) {
	if s.Analyses == nil {
		return nil, nil
	}
	return s.Analyses(cluster)
}

// analyse starts a cluster's analyses, each said measurement by
// measurement, and returns where each one's outcome arrives (nil: it
// passed, and its gate is passed) and how many there are.
func (s soakRun) analyse(ctx context.Context, cluster string, end time.Time, list []*analysis.Analysis) (<-chan error, int) {
	out := make(chan error, len(list))
	for _, a := range list {
		go func() {
			err := a.Run(ctx, end, func(m analysis.Measurement) { s.Emit(measured(cluster, m)) })
			if err == nil {
				s.Gates(cluster).Pass("", "analysis "+a.Spec.Name)
			}
			out <- err
		}()
	}
	return out, len(list)
}

// stage is a soak's progress: "soak, 12s left", "soak, 2 analyses left".
func (s soakRun) stage(end time.Time, pending int) string {
	if left := time.Until(end); left > 0 || pending == 0 {
		return fmt.Sprintf("soak, %s left", max(0, left).Round(time.Second))
	}
	return "soak, " + analyses(pending) + " left"
}

// failed fails a cluster's soak with err: said, its gates told, and
// Ended told.
func (s soakRun) failed(ctx context.Context, cluster string, end time.Time, err error) error {
	s.Emit(SoakEvent{Type: typeSoak, Cluster: cluster, State: "failed", Left: max(0, time.Until(end).Seconds()), Error: err.Error()})
	s.Gates(cluster).Fail("", "soak: "+oneLine(err))
	return s.ended(ctx, cluster, fmt.Errorf("soak: %w", err))
}

// stopped is the error of a soak whose context ended before its end:
// Ctrl-C (run ended), or a lock of the cluster lost. That is said, the
// release left unverified, and Ended told, whose writes (the verdict, an
// --atomic restore) cannot happen: it says what was not done.
func (s soakRun) stopped(run, ctx context.Context, cluster string, end time.Time) error {
	left := time.Until(end)
	lost := lostLock(ctx)
	if lost == nil || run.Err() != nil {
		return interrupted{fmt.Sprintf("soak interrupted with %s left", left.Round(time.Second))}
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
	e.soakedIn = map[string]string{}
	for i := range ws {
		g := e.r.Fleet.Group(ws[i].Group)
		if g == nil {
			continue
		}
		d := g.Soak // after the group's last wave
		if i+1 < len(ws) && ws[i+1].Group == g.Name && g.BatchSoak > 0 {
			d = g.BatchSoak // after a batch another follows
		}
		analyses := g.AnalysesOf(ws[i].Batch)
		if d <= 0 && len(analyses) == 0 {
			continue
		}
		for _, c := range ws[i].Clusters {
			e.soakedIn[c] = ws[i].Name
		}
		out[ws[i].Name] = soakRun{
			Duration: d, Interval: e.o.SoakInterval,
			Health:   e.soakCheck,
			Gates:    e.gatesOf,
			Analyses: e.analysesOf(analyses),
			Emit:     e.emit,
			Stage:    func(cluster, stage string) { e.emit(StageEvent{Cluster: cluster, Stage: stage}) },
			Ended:    e.end,
			Writes:   e.Locks.Writes,
			Release:  e.release,
		}
	}
	return out
}

// analysesOf makes a cluster's analyses of specs as its soak starts:
// each provider aimed with the cluster's attributes (those read from it
// too), its credentials read from the environment. A delivered cluster
// no context reads is not analysed: nothing says when its Flux applied
// the release, and its verdict stays unverified (clusterGates).
func (e *Engine) analysesOf(specs []fleet.Analysis) func(cluster string) ([]*analysis.Analysis, error) {
	if len(specs) == 0 {
		return nil
	}
	return func(name string) ([]*analysis.Analysis, error) {
		run := e.runOf(name)
		if !run.target.observed() {
			return nil, nil
		}
		cluster := render.ClusterIn(e.r.Fleet, run.cluster, e.r.Of(name))
		vars := render.VariablesOf(&cluster).Text
		out := make([]*analysis.Analysis, 0, len(specs))
		for _, spec := range specs {
			p, err := analysis.ProviderOf(spec, vars, e.r.Fleet.Dir, os.Getenv, nil)
			if err != nil {
				return nil, fmt.Errorf("analysis %s: %w", spec.Name, err)
			}
			a, err := analysis.Of(spec, p)
			if err != nil {
				return nil, fmt.Errorf("analysis %s: %w", spec.Name, err)
			}
			out = append(out, a)
		}
		return out, nil
	}
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

// interrupted is the error of work Ctrl-C ended, said as it is, and
// context.Canceled underneath: what tells a release that was interrupted
// from one that failed.
type interrupted struct{ msg string }

func (e interrupted) Error() string { return e.msg }

func (e interrupted) Unwrap() error { return context.Canceled }
