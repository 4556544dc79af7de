package fleet

import (
	"testing"
	"time"
)

// planBudget is how long one fleet file may take through the planner:
// its windows asked at three times, its batches, its after: graph. A
// schedule, a duration or a graph that makes any of them loop is found
// as an input over budget, not as a fuzzer that stops answering.
const planBudget = 5 * time.Second

// FuzzPlan drives every fleet file that parses through what a rollout
// plans from it: Group.Open at three times a season apart, the batch
// planner (Steps, BatchOf) and the after: graph (Order, Upstream).
func FuzzPlan(f *testing.F) {
	f.Add([]byte(valid))
	f.Add([]byte(replace("    protected: true\n", "    protected: true\n    windows:\n      - {kind: allow, schedule: '0 9 * * 1-5', duration: 8h, timeZone: Europe/Berlin}\n      - {kind: deny, schedule: '* * * * *', duration: 8784h}\n")))
	f.Add([]byte(replace("    protected: true\n", "    protected: true\n    windows:\n      - {kind: allow, schedule: '0 0 29 2 *', duration: 1m}\n")))
	f.Add([]byte(replace("    protected: true\n", "    protected: true\n    batches: [{name: canary, selector: region=eu}, 50%, {size: 1}]\n    after: [staging]\n")))
	f.Add([]byte(replace("    maxFailures: 0\n", "    maxFailures: 0\n    after: []\n")))
	f.Fuzz(func(t *testing.T, data []byte) {
		fl, err := Parse(data, "fleet.yaml", "/fleet")
		if err != nil {
			return
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for _, at := range []time.Time{
				time.Date(2026, 2, 28, 23, 59, 0, 0, time.UTC),
				time.Date(2026, 6, 21, 12, 0, 0, 0, time.UTC),
				time.Date(2026, 12, 31, 23, 59, 59, 0, time.UTC),
			} {
				for i := range fl.Groups {
					open, next, why := fl.Groups[i].Open(at)
					if open && (why != "" || !next.IsZero()) {
						t.Errorf("group %s open at %s, but why %q, next %s", fl.Groups[i].Name, at, why, next)
					}
					if !open && !next.IsZero() && !next.After(at) {
						t.Errorf("group %s closed at %s, opens next at %s: not later", fl.Groups[i].Name, at, next)
					}
				}
			}
			seen := map[string]bool{}
			for _, s := range fl.Steps() {
				for _, c := range s.Clusters {
					if seen[c] {
						t.Errorf("cluster %s in two steps", c)
					}
					seen[c] = true
				}
			}
			for _, c := range fl.Clusters {
				if !seen[c.Name] {
					t.Errorf("cluster %s in no step", c.Name)
				}
			}
			_ = fl.BatchOf()
			if got := len(fl.Order()); got != len(fl.Groups) {
				t.Errorf("Order has %d groups, the fleet %d", got, len(fl.Groups))
			}
			for _, g := range fl.Groups {
				_ = fl.Upstream(g.Name)
			}
		}()
		select {
		case <-done:
		case <-time.After(planBudget):
			t.Fatalf("planning took over %s:\n%s", planBudget, data)
		}
	})
}
