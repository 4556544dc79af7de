package apply

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

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

// TestLabel marks a test object as the tests' of the app it names: only
// an object that carries it is ever deleted by a test run.
const TestLabel = "fleet.kubectl.io/test-of"

// Test runs an app's tests on a cluster, as Timoni runs an instance's test
// Jobs: the test objects (not members of the app's set, labelled
// TestLabel) are deleted if present from an earlier run, so that a re-run
// re-tests; an object of a test object's name that is not one (someone
// else's) is refused, never deleted nor changed. They are applied, and every Job among them is
// waited for until it has completed. A Job that fails, or does not finish
// in time (Timeout, default 5 minutes), fails the tests, with the last lines of its pods' logs when the
// cluster serves them. On success the test objects are deleted, unless
// Keep.
func Test(ctx context.Context, c *kube.Client, cfg TestConfig) error {
	ctx = detach(ctx)
	stop := kube.StopOf(ctx)
	objs := make([]*unstructured.Unstructured, len(cfg.Objects))
	for i, o := range cfg.Objects {
		objs[i] = o.DeepCopy()
		labels := objs[i].GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[TestLabel] = cfg.App
		objs[i].SetLabels(labels)
	}
	last, err := testObjects(ctx, c, cfg.App, objs)
	if err != nil {
		return err
	}
	if err := deleteAll(ctx, c, last, cfg.Timeout); err != nil {
		return fmt.Errorf("removing the last run's tests: %w", err)
	}
	made := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		if stop.Err() != nil {
			return stop.Err()
		}
		ri, _, err := c.Scope(o)
		var after *unstructured.Unstructured
		if err == nil {
			after, err = c.Patch(ctx, ri, o, kube.ApplyOptions{FieldManager: FieldManager, Force: true})
		}
		if err != nil {
			return fmt.Errorf("test %s: %w", object.Ref(o), err)
		}
		made = append(made, after)
	}
	// Every Job is waited for together, as --wait waits; a failed one, or
	// one still running at the timeout, is reported with its pods' logs.
	var jobs []*unstructured.Unstructured
	byRef := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		if o.GetKind() == "Job" && o.GroupVersionKind().Group == "batch" {
			jobs = append(jobs, o)
			byRef[o.GetNamespace()+"/"+object.Ref(o)] = o
		}
	}
	start := time.Now()
	err = waitHealthy(stop, c, jobs, Config{Timeout: cfg.Timeout, Concurrency: len(jobs), Report: func(ch Change) {
		switch ch.Health {
		case Healthy:
			ch.Health, ch.Reason = Passed, fmt.Sprintf("%.1fs", time.Since(start).Seconds())
		case Unhealthy:
			job := byRef[ch.Namespace+"/"+ch.Ref]
			ch.Health, ch.Err, ch.Reason = TestFailed, fmt.Errorf("%s%s", ch.Reason, podLogs(ctx, c, job, cfg.LogLines)), ""
		}
		cfg.Report(ch)
	}})
	if err != nil {
		return fmt.Errorf("tests: %w", err)
	}
	if !cfg.Keep {
		return deleteAll(ctx, c, made, cfg.Timeout)
	}
	return nil
}

// testObjects reads the live objects of the test objects' names: those
// an earlier run of app's tests left (TestLabel), to delete; any other is
// someone else's, and refused.
func testObjects(ctx context.Context, c *kube.Client, app string, objs []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	var last []*unstructured.Unstructured
	for _, o := range objs {
		ri, _, err := c.Scope(o)
		if err != nil {
			return nil, fmt.Errorf("test %s: %w", object.Ref(o), err)
		}
		live, err := ri.Get(ctx, o.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("test %s: %w", object.Ref(o), err)
		case live.GetLabels()[TestLabel] != app:
			return nil, fmt.Errorf("test %s: %s already exists and is not a test object of app %s (no %s=%s label): someone else's, so it is neither deleted nor changed; give the test object another name", object.Ref(o), object.Ref(o), app, TestLabel, app)
		}
		last = append(last, live)
	}
	return last, nil
}

// deleteAll deletes objects, as read or as applied (their uid: never one
// re-created under their name since), their dependents in the
// background, and waits until they are gone.
func deleteAll(ctx context.Context, c *kube.Client, objs []*unstructured.Unstructured, timeout time.Duration) error {
	for _, o := range objs {
		ri, _, err := c.Resource(o)
		if err == nil {
			err = deleteAndWait(ctx, ri, o.GetName(), o.GetUID(), timeout)
		}
		if err != nil {
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
	pods, err := c.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace(job.GetNamespace()).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + job.GetName()})
	if err != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range pods.Items {
		raw, err := c.Core.Pods(p.GetNamespace()).GetLogs(p.GetName(), &corev1.PodLogOptions{TailLines: &lines}).DoRaw(ctx)
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
