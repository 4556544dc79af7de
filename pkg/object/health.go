package object

import (
	"fmt"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Health computes an object's health by kstatus rules, with one change: a
// Job is Current only once it has completed. kstatus calls a Job Current
// as soon as it has started, but a rollout that waits for a Job (a
// migration before the next phase, a test) waits for its result.
func Health(o *unstructured.Unstructured) (*status.Result, error) {
	res, err := status.Compute(o)
	if err != nil || res.Status != status.CurrentStatus || o.GetKind() != "Job" || o.GroupVersionKind().Group != "batch" {
		return res, err
	}
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Complete" && m["status"] == "True" {
			return res, nil
		}
	}
	succeeded, _, _ := unstructured.NestedInt64(o.Object, "status", "succeeded")
	active, _, _ := unstructured.NestedInt64(o.Object, "status", "active")
	failed, _, _ := unstructured.NestedInt64(o.Object, "status", "failed")
	return &status.Result{
		Status:  status.InProgressStatus,
		Message: fmt.Sprintf("Job running: %d succeeded, %d active, %d failed", succeeded, active, failed),
	}, nil
}
