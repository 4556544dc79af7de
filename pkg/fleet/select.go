package fleet

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
)

// Selection narrows a fleet to some clusters. Its parts intersect; an empty
// Selection selects the whole fleet.
type Selection struct {
	// Groups are group names.
	Groups []string
	// Clusters are cluster names or globs ("prod-*").
	Clusters []string
	// Selector is a Kubernetes label selector over cluster labels.
	Selector string
	// Contexts are kubeconfig context names: the clusters that use them
	// (for tools such as k9s that know the context in view).
	Contexts []string
}

// IsEmpty reports whether nothing narrows the selection.
func (s Selection) IsEmpty() bool {
	return len(s.Groups) == 0 && len(s.Clusters) == 0 && s.Selector == "" && len(s.Contexts) == 0
}

// String spells the selection as the flags that make it.
func (s Selection) String() string {
	var parts []string
	for _, g := range s.Groups {
		parts = append(parts, "--group "+g)
	}
	for _, c := range s.Clusters {
		parts = append(parts, "--cluster "+c)
	}
	if s.Selector != "" {
		parts = append(parts, fmt.Sprintf("--selector %q", s.Selector))
	}
	for _, c := range s.Contexts {
		parts = append(parts, "--kube-context "+c)
	}
	return strings.Join(parts, " ")
}

// Select returns the selected clusters in fleet-file order. Naming a group
// or a cluster the fleet does not have is an error, and so is a selection
// that matches no cluster.
func (f *Fleet) Select(s Selection) ([]*Cluster, error) {
	for _, g := range s.Groups {
		if f.Group(g) == nil {
			return nil, fmt.Errorf("--group %s: no such group in %s (groups: %s)", g, f.Path, strings.Join(f.groupNames(), ", "))
		}
	}
	for _, c := range s.Clusters {
		if _, err := path.Match(c, ""); err != nil {
			return nil, fmt.Errorf("--cluster %s: invalid pattern", c)
		}
		if len(f.matchClusters(c)) == 0 {
			return nil, fmt.Errorf("--cluster %s: no cluster in %s matches", c, f.Path)
		}
	}
	sel := labels.Everything()
	if s.Selector != "" {
		var err error
		if sel, err = labels.Parse(s.Selector); err != nil {
			return nil, fmt.Errorf("--selector %q: %w", s.Selector, err)
		}
	}
	var out []*Cluster
	for i := range f.Clusters {
		c := &f.Clusters[i]
		if c.matches(s.Groups, s.Clusters, sel) && (len(s.Contexts) == 0 || slices.Contains(s.Contexts, c.Context)) {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no cluster in %s matches %s", f.Path, s)
	}
	return out, nil
}

func (c *Cluster) matches(groups, patterns []string, sel labels.Selector) bool {
	if len(groups) > 0 && !slices.Contains(groups, c.Group) {
		return false
	}
	if len(patterns) > 0 && !matchAny(patterns, c.Name) {
		return false
	}
	return sel.Matches(labels.Set(c.Labels))
}

// Targets returns the clusters of clusters that app is deployed to.
func (a *App) Targets(clusters []*Cluster) []*Cluster {
	sel := labels.Everything()
	if a.Selector != "" {
		sel, _ = labels.Parse(a.Selector) // validated on load
	}
	var out []*Cluster
	for _, c := range clusters {
		if c.matches(a.Groups, a.Clusters, sel) {
			out = append(out, c)
		}
	}
	return out
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}
