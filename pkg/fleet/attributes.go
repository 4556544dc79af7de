package fleet

// Attributes returns the cluster's attributes: the fleet defaults, overridden
// by the cluster's group, overridden by the cluster. Nested mappings merge key
// by key; any other value (lists included) replaces the one below it.
func (f *Fleet) Attributes(c *Cluster) map[string]any {
	out := map[string]any{}
	merge(out, f.Defaults.Attributes)
	if g := f.Group(c.Group); g != nil {
		merge(out, g.Attributes)
	}
	merge(out, c.Attributes)
	return out
}

// AttributesFrom returns the cluster-read attributes for c in precedence
// order: defaults, then group, then cluster, so later entries win.
func (f *Fleet) AttributesFrom(c *Cluster) []AttributeFrom {
	var out []AttributeFrom
	out = append(out, f.Defaults.AttributesFrom...)
	if g := f.Group(c.Group); g != nil {
		out = append(out, g.AttributesFrom...)
	}
	return append(out, c.AttributesFrom...)
}

func merge(dst, src map[string]any) {
	for k, v := range src {
		sm, ok := v.(map[string]any)
		if !ok {
			dst[k] = v
			continue
		}
		dm, ok := dst[k].(map[string]any)
		if !ok {
			dm = map[string]any{}
		} else {
			dm = copyMap(dm)
		}
		merge(dm, sm)
		dst[k] = dm
	}
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
