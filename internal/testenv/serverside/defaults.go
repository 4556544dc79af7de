// Package serverside is what an API server does to an object it stores
// that the test doubles share (the stand-in server of the bench and
// internal/kubetest of the unit tests): apimachinery's own field manager
// (FieldManager) and the defaulting of the kinds the tests deploy
// (Default).
package serverside

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Default fills in what kube-apiserver's defaulting adds to an object of
// gr, for the kinds the tests and make bench deploy: answers as large as
// a real server's, and fields a render does not set that diff must not
// call drift.
func Default(gr schema.GroupResource, obj map[string]any) {
	if d := defaulters[gr]; d != nil {
		d(obj)
	}
}

var defaulters = map[schema.GroupResource]func(obj map[string]any){
	{Group: "apps", Resource: "deployments"}: defaultDeployment,
}

// setDefault sets m[k] to v when it is missing.
func setDefault(m map[string]any, k string, v any) {
	if _, ok := m[k]; !ok {
		m[k] = v
	}
}

// child is m[k] as a map, made when missing.
func child(m map[string]any, k string) map[string]any {
	c, ok := m[k].(map[string]any)
	if !ok {
		c = map[string]any{}
		m[k] = c
	}
	return c
}

// defaultDeployment is apps/v1 Deployment's defaulting (SetDefaults_Deployment
// and those of its pod template).
func defaultDeployment(obj map[string]any) {
	spec := child(obj, "spec")
	setDefault(spec, "replicas", int64(1))
	strategy := child(spec, "strategy")
	setDefault(strategy, "type", "RollingUpdate")
	if strategy["type"] == "RollingUpdate" {
		ru := child(strategy, "rollingUpdate")
		setDefault(ru, "maxUnavailable", "25%")
		setDefault(ru, "maxSurge", "25%")
	}
	setDefault(spec, "revisionHistoryLimit", int64(10))
	setDefault(spec, "progressDeadlineSeconds", int64(600))
	defaultPodSpec(child(child(spec, "template"), "spec"))
}

func defaultPodSpec(pod map[string]any) {
	setDefault(pod, "restartPolicy", "Always")
	setDefault(pod, "terminationGracePeriodSeconds", int64(30))
	setDefault(pod, "dnsPolicy", "ClusterFirst")
	setDefault(pod, "securityContext", map[string]any{})
	setDefault(pod, "schedulerName", "default-scheduler")
	for _, list := range []string{"initContainers", "containers"} {
		cs, _ := pod[list].([]any)
		for _, c := range cs {
			c, ok := c.(map[string]any)
			if !ok {
				continue
			}
			setDefault(c, "resources", map[string]any{})
			setDefault(c, "terminationMessagePath", "/dev/termination-log")
			setDefault(c, "terminationMessagePolicy", "File")
			image, _ := c["image"].(string)
			if i := strings.LastIndex(image, ":"); i < 0 || strings.Contains(image[i:], "/") || strings.HasSuffix(image, ":latest") {
				setDefault(c, "imagePullPolicy", "Always")
			} else {
				setDefault(c, "imagePullPolicy", "IfNotPresent")
			}
			ports, _ := c["ports"].([]any)
			for _, p := range ports {
				if p, ok := p.(map[string]any); ok {
					setDefault(p, "protocol", "TCP")
				}
			}
		}
	}
}
