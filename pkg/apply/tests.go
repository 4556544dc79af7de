package apply

import (
	"context"
	"fmt"
	"strings"
	"time"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
)

// TestConfig is one run of an app's tests on a cluster.
type TestConfig struct {
	App     string
	Objects []*unstructured.Unstructured
	// Timeout bounds the wait for the Jobs; 0 means 5 minutes.
	Timeout time.Duration
	// Keep leaves the test objects in place afterwards.
	Keep bool
	// Report receives a line about each test Job.
	Report func(Change)
	// LogLines is how many last lines of a failed Job's pods are shown.
	LogLines int64
}

// Test runs an app's tests on a cluster, as Timoni runs an instance's test
// Jobs: the test objects (not members of the app's set) are deleted if
// present, so that a re-run re-tests, applied, and every Job among them is
// waited for until it has completed. A Job that fails, or does not finish
// in time, fails the tests, with the last lines of its pods' logs when the
// cluster serves them. On success the test objects are deleted, unless
// Keep.
func Test(ctx context.Context, c *kube.Client, cfg TestConfig) error {
	stop := ctx
	ctx = context.WithoutCancel(ctx)
	objs := make([]*unstructured.Unstructured, len(cfg.Objects))
	for i, o := range cfg.Objects {
		objs[i] = o.DeepCopy()
	}
	if err := deleteAll(ctx, c, objs, cfg.Timeout); err != nil {
		return fmt.Errorf("removing the last run's tests: %w", err)
	}
	for _, o := range objs {
		if stop.Err() != nil {
			return stop.Err()
		}
		ri, _, err := c.Scope(o)
		if err == nil {
			_, err = c.Patch(ctx, ri, o, kube.ApplyOptions{FieldManager: FieldManager, Force: true})
		}
		if err != nil {
			return fmt.Errorf("test %s: %w", object.Ref(o), err)
		}
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	waitCtx, cancel := context.WithTimeout(stop, timeout)
	defer cancel()
	for _, o := range objs {
		if o.GetKind() != "Job" || o.GroupVersionKind().Group != "batch" {
			continue
		}
		start := time.Now()
		res, err := waitJob(waitCtx, c, o)
		ch := Change{Ref: object.Ref(o), Namespace: o.GetNamespace(), Action: "passed", Reason: fmt.Sprintf("%.1fs", time.Since(start).Seconds())}
		if err == nil && res.Status != kstatus.CurrentStatus {
			err = fmt.Errorf("%s", res.Message)
		}
		if err != nil {
			if waitCtx.Err() != nil && stop.Err() == nil {
				err = fmt.Errorf("not complete after %s: %w", timeout, err)
			}
			ch.Action, ch.Err = Failed, fmt.Errorf("test %s failed: %w%s", object.Ref(o), err, podLogs(ctx, c, o, cfg.LogLines))
			cfg.Report(ch)
			return fmt.Errorf("test %s failed", object.Ref(o))
		}
		cfg.Report(ch)
	}
	if !cfg.Keep {
		return deleteAll(ctx, c, objs, cfg.Timeout)
	}
	return nil
}

// waitJob polls a Job until it completes or fails, or ctx ends.
func waitJob(ctx context.Context, c *kube.Client, job *unstructured.Unstructured) (*kstatus.Result, error) {
	ri, _, err := c.Resource(job)
	if err != nil {
		return nil, err
	}
	last := &kstatus.Result{Status: kstatus.UnknownStatus, Message: "not read yet"}
	for {
		live, err := ri.Get(ctx, job.GetName(), metav1.GetOptions{})
		if err == nil {
			if last, err = object.Health(live); err != nil {
				return nil, err
			}
			if last.Status == kstatus.CurrentStatus || last.Status == kstatus.FailedStatus {
				return last, nil
			}
		}
		select {
		case <-ctx.Done():
			return last, fmt.Errorf("%s", last.Message)
		case <-time.After(time.Second):
		}
	}
}

// deleteAll deletes objects (their dependents in the background) and waits
// until they are gone.
func deleteAll(ctx context.Context, c *kube.Client, objs []*unstructured.Unstructured, timeout time.Duration) error {
	bg := metav1.DeletePropagationBackground
	for _, o := range objs {
		ri, _, err := c.Scope(o)
		if err != nil {
			return err
		}
		if err := ri.Delete(ctx, o.GetName(), metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("%s: %w", object.Ref(o), err)
		}
		if err := waitGone(ctx, ri, o.GetName(), timeout); err != nil {
			return fmt.Errorf("%s: %w", object.Ref(o), err)
		}
	}
	return nil
}

// podLogs returns the last lines of the logs of a Job's pods, as text to
// append to an error, or "" when the cluster does not serve them.
func podLogs(ctx context.Context, c *kube.Client, job *unstructured.Unstructured, lines int64) string {
	if lines <= 0 {
		lines = 20
	}
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return ""
	}
	pods, err := c.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace(job.GetNamespace()).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + job.GetName()})
	if err != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range pods.Items {
		raw, err := cs.CoreV1().Pods(p.GetNamespace()).GetLogs(p.GetName(), &corev1.PodLogOptions{TailLines: &lines}).DoRaw(ctx)
		if err != nil || len(raw) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n  logs of pod %s (last %d lines):", p.GetName(), lines)
		for _, line := range strings.Split(strings.TrimRight(string(raw), "\n"), "\n") {
			b.WriteString("\n    " + line)
		}
	}
	return b.String()
}
