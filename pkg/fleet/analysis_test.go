package fleet

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// A batch's analyses run after its group's; the group's alone elsewhere.
func TestAnalysesOf(t *testing.T) {
	in := strings.Replace(valid, "    protected: true\n", `    protected: true
    soak: 10m
    batchSoak: 2m
    analysis:
      - name: error-rate
        prometheus: {address: 'http://prom.${FLEET_CLUSTER_NAME}:9090', query: 'sum(rate(x[2m]))'}
        successCondition: result < 0.01
    batches:
      - name: canary
        size: 1
        analysis:
          - name: latency
            web: {url: 'https://slo.example.com/${FLEET_CLUSTER_NAME}', auth: {bearerTokenFile: token}}
            failureCondition: result.p99 > 0.5
            interval: 10s
      - size: 100%
`, 1)
	f, err := Parse([]byte(in), "fleet.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	g := f.Group("production")
	names := func(list []Analysis) (out []string) {
		for _, a := range list {
			out = append(out, a.Name)
		}
		return out
	}
	for batch, want := range map[string][]string{"canary": {"error-rate", "latency"}, "2": {"error-rate"}, "": {"error-rate"}} {
		if diff := cmp.Diff(want, names(g.AnalysesOf(batch))); diff != "" {
			t.Errorf("batch %q (-want +got):\n%s", batch, diff)
		}
	}
	if got := g.Batches[0].Analysis[0].Interval; got != 10*time.Second {
		t.Errorf("interval %s", got)
	}
	if len(g.Analysis) != 1 {
		t.Errorf("the group's analyses were changed: %v", names(g.Analysis))
	}
}

// A group's onFailure wins over the fleet's; hold is the default.
func TestRollsBack(t *testing.T) {
	for _, tt := range []struct {
		fleet, group string
		want         bool
	}{
		{"", "", false},
		{"rollback", "", true},
		{"rollback", "hold", false},
		{"hold", "rollback", true},
		{"", "rollback", true},
	} {
		f := &Fleet{OnFailure: tt.fleet}
		if got := f.RollsBack(&Group{OnFailure: tt.group}); got != tt.want {
			t.Errorf("fleet %q, group %q: %v, want %v", tt.fleet, tt.group, got, tt.want)
		}
	}
}

// onFailure: rollback with a history of one revision has nothing to go
// back to: said at the onFailure that asks it.
func TestCheckRollback(t *testing.T) {
	in := strings.Replace(valid, "    protected: true\n", "    protected: true\n    onFailure: rollback\n", 1)
	f, err := Parse([]byte(in), "fleet.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	err = f.CheckRollback(1)
	if err == nil || !strings.HasPrefix(err.Error(), "fleet.yaml:15: group production: onFailure: rollback needs an earlier revision to go back to") {
		t.Errorf("history limit 1: %v", err)
	}
	for _, limit := range []int{0, 2, 10} {
		if err := f.CheckRollback(limit); err != nil {
			t.Errorf("history limit %d: %v", limit, err)
		}
	}
	f.Groups[1].OnFailure = "hold"
	if err := f.CheckRollback(1); err != nil {
		t.Errorf("nothing rolls back: %v", err)
	}
}
