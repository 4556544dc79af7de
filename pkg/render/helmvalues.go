package render

import (
	"slices"
	"sort"
	"strings"

	chart "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
)

// unknownValues warns of the values given (the fleet file's values files
// and inline values) that the chart's values.yaml does not have: a typo
// ("replicaCont") a chart ignores silently. Where the chart's default is
// an empty map (podAnnotations: {}) any key goes; a subchart's name
// (or alias) and "global" are the subcharts'. A chart with a
// values.schema.json is checked against it by Helm itself, when it
// renders.
func unknownValues(ch *chart.Chart, given map[string]any) []string {
	if len(ch.Schema) > 0 {
		return nil
	}
	allowed := []string{"global"}
	for _, d := range ch.Dependencies() {
		if d.Metadata != nil {
			allowed = append(allowed, d.Metadata.Name)
		}
	}
	if ch.Metadata != nil {
		for _, d := range ch.Metadata.Dependencies {
			if d.Alias != "" {
				allowed = append(allowed, d.Alias)
			}
		}
	}
	var out []string
	name := "the chart"
	if ch.Metadata != nil {
		name = "chart " + ch.Metadata.Name
	}
	walkUnknown(ch.Values, given, "", allowed, func(path, near string) {
		w := "values key " + path + " is not in " + name + "'s values.yaml, and the chart may ignore it"
		if near != "" {
			w += ": did you mean " + near + "?"
		}
		out = append(out, w)
	})
	sort.Strings(out)
	return out
}

// walkUnknown calls unknown for each key of given, under prefix, that
// defaults does not have, with the default key it is closest to.
func walkUnknown(defaults, given map[string]any, prefix string, allowed []string, unknown func(path, near string)) {
	keys := make([]string, 0, len(defaults))
	for k := range defaults {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for k, v := range given {
		path := strings.TrimPrefix(prefix+"."+k, ".")
		def, ok := defaults[k]
		switch {
		case !ok && slices.Contains(allowed, k):
		case !ok:
			near := output.Closest(k, keys)
			if near != "" {
				near = strings.TrimPrefix(prefix+"."+near, ".")
			}
			unknown(path, near)
		default:
			dm, dIsMap := def.(map[string]any)
			gm, gIsMap := v.(map[string]any)
			if dIsMap && gIsMap && len(dm) > 0 {
				walkUnknown(dm, gm, path, nil, unknown)
			}
		}
	}
}
