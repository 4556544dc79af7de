package kube

import (
	"context"
	"fmt"
	"strings"

	"golang.org/x/sync/errgroup"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
)

// Probe is what a check of one cluster found.
type Probe struct {
	// Server is the URL the context points at.
	Server string `json:"server"`
	// Reachable is whether the API server answered.
	Reachable bool `json:"reachable"`
	// Version is the server's gitVersion.
	Version string `json:"version,omitempty"`
	// UID is the kube-system namespace UID, the cluster's identity.
	UID string `json:"uid,omitempty"`
	// Problems lists what is wrong: unreachable and why, pin mismatches.
	Problems []string `json:"problems,omitempty"`
}

// OK reports whether the cluster answered and matches its pins.
func (p Probe) OK() bool { return p.Reachable && len(p.Problems) == 0 }

// ProbeCluster asks a cluster for its version and identity and compares
// them with the fleet file's pins (empty pins are not checked).
func ProbeCluster(ctx context.Context, flags genericclioptions.RESTClientGetter, pinServer, pinUID string) Probe {
	var p Probe
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		p.Problems = append(p.Problems, err.Error())
		return p
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		p.Server = cfg.Host
		p.Problems = append(p.Problems, err.Error())
		return p
	}
	return probe(ctx, cfg.Host, client.Discovery(), client.CoreV1(), pinServer, pinUID)
}

// probe is ProbeCluster of the cluster at host, through its version and
// core clients.
func probe(ctx context.Context, host string, version discovery.ServerVersionInterface, core corev1client.NamespacesGetter, pinServer, pinUID string) Probe {
	p := Probe{Server: host}
	if pinServer != "" && strings.TrimSuffix(pinServer, "/") != strings.TrimSuffix(host, "/") {
		p.Problems = append(p.Problems, fmt.Sprintf("server mismatch: the fleet file pins %s, the context points at %s", pinServer, host))
	}
	v, err := version.ServerVersion()
	if err != nil {
		p.Problems = append(p.Problems, "unreachable: "+err.Error())
		return p
	}
	p.Reachable, p.Version = true, v.GitVersion
	ns, err := core.Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
	if err != nil {
		p.Problems = append(p.Problems, "reading the kube-system namespace: "+err.Error())
		return p
	}
	p.UID = string(ns.UID)
	if pinUID != "" && pinUID != p.UID {
		p.Problems = append(p.Problems, fmt.Sprintf("identity mismatch: the fleet file pins uid %s, the cluster has %s", pinUID, p.UID))
	}
	return p
}

// ProbeAll probes clusters in parallel, at most parallel at once; results
// are in input order.
func ProbeAll(ctx context.Context, parallel int, flags []genericclioptions.RESTClientGetter, pins [][2]string) []Probe {
	out := make([]Probe, len(flags))
	if parallel <= 0 {
		parallel = len(flags)
	}
	var g errgroup.Group
	g.SetLimit(parallel)
	for i := range flags {
		g.Go(func() error {
			out[i] = ProbeCluster(ctx, flags[i], pins[i][0], pins[i][1])
			return nil
		})
	}
	_ = g.Wait()
	return out
}

// ProbeFleet probes the clusters of a fleet (ProbeAll), each through its
// own kubeconfig and context (ForCluster over cf), against its pins, with
// a 10s timeout unless --request-timeout gives one.
func ProbeFleet(ctx context.Context, cf *genericclioptions.ConfigFlags, f *fleet.Fleet, clusters []*fleet.Cluster, parallel int) []Probe {
	flags := make([]genericclioptions.RESTClientGetter, len(clusters))
	pins := make([][2]string, len(clusters))
	for i, c := range clusters {
		ccf := ForCluster(cf, f, c)
		if ccf.Timeout == nil || *ccf.Timeout == "" || *ccf.Timeout == "0" {
			timeout := "10s"
			ccf.Timeout = &timeout
		}
		flags[i] = NewGetter(ccf)
		pins[i] = [2]string{c.Server, c.UID}
	}
	return ProbeAll(ctx, parallel, flags, pins)
}
