package registry

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/internal/registrytest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/pause"
)

// A delivered cluster's pauses live in its registry, one record per
// cluster: set, read and lifted as on a cluster, another cluster's
// apart; an artifact under the pauses' tag that kubectl fleet did not
// write is an error, never "no pause" (failing closed).
func TestPublishedPauses(t *testing.T) {
	d, reg := registrytest.Delivery(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 27, 7, 0, 0, 0, time.UTC)
	edge1, err := pauseStore(nil, d, "edge-1")
	if err != nil {
		t.Fatal(err)
	}
	if ps, err := readPauses(ctx, nil, d, "edge-1"); err != nil || len(ps) != 0 {
		t.Fatalf("no record: got %v, %v", ps, err)
	}
	if err := pause.SetIn(ctx, edge1, []string{"web"}, pause.Pause{By: "alice", At: at, Reason: "INC-1"}); err != nil {
		t.Fatal(err)
	}
	if err := pause.SetIn(ctx, edge1, nil, pause.Pause{By: "bob", At: at, Reason: "freeze"}); err != nil {
		t.Fatal(err)
	}
	ps, err := readPauses(ctx, nil, d, "edge-1")
	if err != nil || len(ps) != 2 || ps[0].App != "" || ps[1].App != "web" || ps[1].By != "alice" {
		t.Fatalf("edge-1's pauses: got %+v, %v", ps, err)
	}
	if ps, err := readPauses(ctx, nil, d, "edge-2"); err != nil || len(ps) != 0 {
		t.Fatalf("edge-2 is not paused: got %v, %v", ps, err)
	}
	lifted, err := pause.LiftIn(ctx, edge1, []string{"web"})
	if err != nil || len(lifted) != 1 || lifted[0].Reason != "INC-1" {
		t.Fatalf("lift of web: got %+v, %v", lifted, err)
	}
	if ps, _ := readPauses(ctx, nil, d, "edge-1"); pause.Find(ps, "web") == nil || ps[0].Reason != "freeze" {
		t.Fatalf("the pause of every app still holds web: got %+v", ps)
	}

	dg := registrytest.Pushed(t, reg, PauseRepository, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x"}}})
	if err := reg.Tag(ctx, PauseRepository, PauseTag("edge-1"), dg); err != nil {
		t.Fatal(err)
	}
	if ps, err := readPauses(ctx, nil, d, "edge-1"); err == nil {
		t.Fatalf("a foreign artifact under the pauses' tag read as %v", ps)
	}
}

// When the delivery signs, the pause record is signed: someone with push
// rights who writes {} over it (or any record the key did not sign)
// lifts nothing, it holds every app; a pause without the key is written
// unsigned and holds every app too; a resume needs the key.
func TestSignedPauses(t *testing.T) {
	f, d, reg := registrytest.SignedDelivery(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 27, 7, 0, 0, 0, time.UTC)
	edge1, err := pauseStore(f, d, "edge-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := pause.SetIn(ctx, edge1, []string{"web"}, pause.Pause{By: "alice", At: at, Reason: "INC-1"}); err != nil {
		t.Fatal(err)
	}
	if ps, err := readPauses(ctx, f, d, "edge-1"); err != nil || len(ps) != 1 || ps[0].Reason != "INC-1" || pause.Find(ps, "api") != nil {
		t.Fatalf("a signed pause of web: %+v, %v", ps, err)
	}
	// {} written with push rights alone.
	if err := reg.WithoutRecordKeys().WriteRecord(ctx, PauseRepository, PauseTag("edge-1"), map[string]string{}); err != nil {
		t.Fatal(err)
	}
	ps, err := readPauses(ctx, f, d, "edge-1")
	if err != nil || pause.Find(ps, "web") == nil || pause.Find(ps, "api") == nil || !strings.Contains(ps[0].Reason, "is not signed by the delivery's key (its signature does not verify)") && !strings.Contains(ps[0].Reason, "(it has no signature)") {
		t.Fatalf("an unsigned {} over the pauses: %+v, %v", ps, err)
	}
	// A signed record of edge-2 copied over edge-1's: bound to its tag.
	edge2, _ := pauseStore(f, d, "edge-2")
	if err := pause.SetIn(ctx, edge2, []string{"api"}, pause.Pause{By: "dave", At: at, Reason: "edge-2 only"}); err != nil {
		t.Fatal(err)
	}
	repo, _ := reg.Repository(PauseRepository)
	copied, _, err := reg.Resolve(ctx, PauseRepository, PauseTag("edge-2"))
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Tag(ctx, PauseRepository, PauseTag("edge-1"), copied); err != nil {
		t.Fatal(err)
	}
	if ps, err := readPauses(ctx, f, d, "edge-1"); err != nil || pause.Find(ps, "web") == nil || !strings.Contains(ps[0].Reason, repo.Tag(PauseTag("edge-1")).String()) {
		t.Fatalf("edge-2's signed record under edge-1's tag: %+v, %v", ps, err)
	}
	// Without the key: a pause is written (unsigned: it holds every
	// app), a resume is refused.
	nokey, _ := pauseStore(f, registrytest.KeylessDelivery(t, f, d), "edge-3")
	if err := pause.SetIn(ctx, nokey, []string{"web"}, pause.Pause{By: "carol", At: at, Reason: "no key"}); err != nil {
		t.Fatalf("a pause without the key: %v", err)
	}
	if ps, err := readPauses(ctx, f, d, "edge-3"); err != nil || pause.Find(ps, "api") == nil {
		t.Fatalf("an unsigned pause holds every app: %+v, %v", ps, err)
	}
	if _, err := pause.LiftIn(ctx, nokey, nil); err == nil || !strings.Contains(err.Error(), "resuming a delivered cluster signs its pause record") {
		t.Fatalf("a resume without the key: %v", err)
	}
}

// A pause and a resume of another app at once, on a registry whose
// writes of the record are slow: both hold, round after round. Without
// the condition, the resume writes back what it read before the pause,
// and the pause is lost.
func TestPublishedPauseAndResumeAtOnce(t *testing.T) {
	d, _ := registrytest.DeliveryWith(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/manifests/") {
				time.Sleep(150 * time.Millisecond) // the writes cross
			}
			next.ServeHTTP(w, r)
		})
	})
	ctx := context.Background()
	at := time.Date(2026, 11, 28, 7, 0, 0, 0, time.UTC)
	for round := range 3 {
		cluster := fmt.Sprintf("edge-%d", round)
		s, err := pauseStore(nil, d, cluster)
		if err != nil {
			t.Fatal(err)
		}
		if err := pause.SetIn(ctx, s, []string{"api"}, pause.Pause{By: "alice", At: at, Reason: "to resume"}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var pauseErr, resumeErr error
		wg.Go(func() {
			pauseErr = pause.SetIn(ctx, s, []string{"web"}, pause.Pause{By: "bob", At: at, Reason: "INC-7"})
		})
		wg.Go(func() { _, resumeErr = pause.LiftIn(ctx, s, []string{"api"}) })
		wg.Wait()
		if pauseErr != nil || resumeErr != nil {
			t.Fatalf("round %d: pause: %v, resume: %v", round, pauseErr, resumeErr)
		}
		ps, err := readPauses(ctx, nil, d, cluster)
		if err != nil || len(ps) != 1 || ps[0].App != "web" || ps[0].Reason != "INC-7" {
			t.Fatalf("round %d: after a pause of web and a resume of api at once: %+v, %v", round, ps, err)
		}
	}
}

// readPauses reads delivered cluster cluster's pauses in d's registry.
func readPauses(ctx context.Context, f *fleet.Fleet, d *fleet.Delivery, cluster string) ([]pause.Pause, error) {
	s, err := pauseStore(f, d, cluster)
	if err != nil {
		return nil, err
	}
	return pause.ReadFrom(ctx, s)
}
