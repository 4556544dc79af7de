package pause

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/internal/kubetest"
)

// TestSetReadLift: pauses of one app and of every app live side by side
// in one ConfigMap per fleet, another fleet's apart; a lift of an app
// leaves the pause of every app, and the last lift removes the
// ConfigMap.
func TestSetReadLift(t *testing.T) {
	ctx := context.Background()
	c := kubetest.New(t)
	at := time.Date(2026, 11, 26, 7, 0, 0, 0, time.UTC)
	if err := Set(ctx, c.Client, "shop", []string{"web"}, Pause{By: "alice", At: at, Reason: "INC-1"}); err != nil {
		t.Fatal(err)
	}
	if err := Set(ctx, c.Client, "shop", nil, Pause{By: "bob", At: at, Reason: "freeze"}); err != nil {
		t.Fatal(err)
	}
	if err := Set(ctx, c.Client, "other", nil, Pause{By: "carol", At: at, Reason: "theirs"}); err != nil {
		t.Fatal(err)
	}
	ps, err := Read(ctx, c.Client, "shop")
	if err != nil || len(ps) != 2 || ps[0].App != "" || ps[1].App != "web" {
		t.Fatalf("read %+v, %v", ps, err)
	}
	if p := Find(ps, "db"); p == nil || p.By != "bob" {
		t.Errorf("db is paused by the pause of every app: %+v", p)
	}
	if got := ps[1].Text(at.Add(10 * time.Minute)); got != `web paused 10m ago by alice: "INC-1"` {
		t.Errorf("text %q", got)
	}
	lifted, err := Lift(ctx, c.Client, "shop", []string{"web"})
	if err != nil || len(lifted) != 1 || lifted[0].App != "web" {
		t.Fatalf("lift web: %+v, %v", lifted, err)
	}
	if ps, _ := Read(ctx, c.Client, "shop"); len(ps) != 1 || ps[0].App != "" {
		t.Errorf("after lifting web: %+v", ps)
	}
	if lifted, err := Lift(ctx, c.Client, "shop", nil); err != nil || len(lifted) != 1 {
		t.Fatalf("lift all: %+v, %v", lifted, err)
	}
	if c.Live(kubetest.Object("v1", "ConfigMap", Namespace, Name("shop"))) != nil {
		t.Error("the ConfigMap of no pause is left")
	}
	if ps, _ := Read(ctx, c.Client, "other"); len(ps) != 1 || !strings.Contains(ps[0].Text(at), "theirs") {
		t.Errorf("the other fleet's pause: %+v", ps)
	}
}
