package rendered

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
)

// TestReadEachIsBounded: a fleet's reads (attributesFrom, a chart's
// capabilities) go readsAtOnce at a time, every cluster read, every error
// named by its cluster, the skipped left out.
func TestReadEachIsBounded(t *testing.T) {
	var clusters []*fleet.Cluster
	for i := range 3 * readsAtOnce {
		clusters = append(clusters, &fleet.Cluster{Name: fmt.Sprintf("c%d", i)})
	}
	var (
		mu             sync.Mutex
		inFlight, peak int
	)
	got, err := readEach(clusters, func(c *fleet.Cluster) (string, bool, error) {
		mu.Lock()
		inFlight++
		peak = max(peak, inFlight)
		mu.Unlock()
		time.Sleep(time.Millisecond)
		mu.Lock()
		inFlight--
		mu.Unlock()
		return c.Name, c.Name != "c0", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if peak > readsAtOnce || peak < 2 {
		t.Errorf("%d reads at once, want 2 to %d", peak, readsAtOnce)
	}
	if _, skipped := got["c0"]; skipped || len(got) != len(clusters)-1 || got["c7"] != "c7" {
		t.Errorf("%d read (c0 included: %v), want every cluster but c0", len(got), skipped)
	}
	_, err = readEach(clusters[:3], func(c *fleet.Cluster) (int, bool, error) { return 0, true, errors.New("refused") })
	if err == nil || strings.Count(err.Error(), "refused") != 3 || !strings.Contains(err.Error(), "cluster c2: refused") {
		t.Errorf("errors: %v", err)
	}
}
