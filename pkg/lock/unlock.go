package lock

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
)

// Found are the locks read on clusters, by cluster and app: what
// "kubectl fleet unlock" shows, and removes if they are still the same.
type Found map[string]map[string]*Info

// Read reads apps' locks on every cluster, parallel at once; say is told
// each lock found ("web: held by … since …"). It returns the locks found
// and each cluster's outcome.
func Read(ctx context.Context, conn kube.Connector, f *fleet.Fleet, clusters []*fleet.Cluster, apps []string, parallel int, say func(cluster, line string)) (Found, []runner.Outcome) {
	var mu sync.Mutex
	found := Found{}
	now := time.Now()
	read := kube.Each(ctx, conn, f, clusters, parallel, func(ctx context.Context, c *fleet.Cluster, client *kube.Client) error {
		name := c.Name
		for _, app := range apps {
			info, err := Get(ctx, client, app)
			if err != nil {
				return err
			}
			if info == nil {
				continue
			}
			say(name, app+": "+info.Describe(now))
			mu.Lock()
			if found[name] == nil {
				found[name] = map[string]*Info{}
			}
			found[name][app] = info
			mu.Unlock()
		}
		return nil
	})
	return found, read
}

// Locked lists the locks found as "web on prod-eu", sorted.
func (f Found) Locked() []string {
	var out []string
	for cluster, apps := range f {
		for app := range apps {
			out = append(out, app+" on "+cluster)
		}
	}
	sort.Strings(out)
	return out
}

// What is what unlock asks to confirm: "the lock of web on prod-eu, web
// on prod-us"; "" when no lock was found.
func (f Found) What() string {
	locked := f.Locked()
	if len(locked) == 0 {
		return ""
	}
	return "the lock of " + strings.Join(locked, ", ")
}

// Remove removes the locks found, each only if it is still the one read
// (not renewed or taken since); a cluster whose read failed fails with
// that error. It returns what each cluster's locks became ("unlocked";
// with several apps "web unlocked, api not locked") and each cluster's
// outcome.
func (f Found) Remove(ctx context.Context, conn kube.Connector, fl *fleet.Fleet, clusters []*fleet.Cluster, read []runner.Outcome, apps []string, parallel int) (map[string]string, []runner.Outcome) {
	states := map[string]string{}
	readErr := map[string]error{}
	for _, oc := range read {
		readErr[oc.Cluster] = oc.Err
	}
	names, byName := fleet.Index(clusters)
	connect := func(ctx context.Context, name string) (*kube.Client, error) {
		return conn.Connect(ctx, fl, byName[name])
	}
	var mu sync.Mutex
	outcomes := runner.Run(ctx, runner.Every(names), parallel, func(ctx context.Context, name string) error {
		if err := readErr[name]; err != nil {
			return err
		}
		var parts, errs []string
		for _, app := range apps {
			state, err := f.remove(ctx, name, app, connect)
			if err != nil {
				errs = append(errs, app+": "+err.Error())
				continue
			}
			if len(apps) > 1 {
				state = app + " " + state
			}
			parts = append(parts, state)
		}
		mu.Lock()
		states[name] = strings.Join(parts, ", ")
		mu.Unlock()
		if len(errs) > 0 {
			return errors.New(strings.Join(errs, "; "))
		}
		return nil
	})
	return states, outcomes
}

// remove removes app's lock on cluster if one was found, and says what
// it became: "unlocked", or "not locked" (none found, or gone since).
func (f Found) remove(ctx context.Context, cluster, app string, connect func(context.Context, string) (*kube.Client, error)) (string, error) {
	info := f[cluster][app]
	if info == nil {
		return "not locked", nil
	}
	client, err := connect(ctx, cluster)
	if err != nil {
		return "", err
	}
	removed, err := Remove(ctx, client, app, info)
	switch {
	case err != nil:
		return "", err
	case removed:
		return "unlocked", nil
	}
	return "not locked", nil
}
