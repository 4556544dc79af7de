package render

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// GroupErrors says each render error once, with the clusters it came
// from: the same error of app web on 1,000 clusters is one line, "clusters
// c1, c2, c3, c4, c5 and 995 more: app web: x", in the order the errors
// first came. An error that is not a target's (a *TargetError) is a line
// of its own.
func GroupErrors(errs []error) []string {
	type key struct{ app, msg string }
	var (
		order    []key
		clusters = map[key][]string{}
	)
	for _, err := range errs {
		k := key{msg: err.Error()}
		var te *TargetError
		if errors.As(err, &te) {
			k = key{app: te.App, msg: te.Err.Error()}
		}
		if _, seen := clusters[k]; !seen {
			order, clusters[k] = append(order, k), nil
		}
		if te != nil && !slices.Contains(clusters[k], te.Cluster) {
			clusters[k] = append(clusters[k], te.Cluster)
		}
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		names, what := clusters[k], "app "+k.app+": "+k.msg
		switch {
		case k.app == "":
			out = append(out, k.msg)
		case len(names) == 1:
			out = append(out, "cluster "+names[0]+": "+what)
		case len(names) <= 5:
			out = append(out, fmt.Sprintf("clusters %s and %s: %s", strings.Join(names[:len(names)-1], ", "), names[len(names)-1], what))
		default:
			out = append(out, fmt.Sprintf("clusters %s and %d more: %s", strings.Join(names[:5], ", "), len(names)-5, what))
		}
	}
	return out
}

// Failed is the error of a render that failed before anything was done
// with it: every error, grouped (GroupErrors), on a line of its own.
func Failed(errs []error) error {
	return fmt.Errorf("rendering failed, nothing was done:\n  %s", strings.Join(GroupErrors(errs), "\n  "))
}
