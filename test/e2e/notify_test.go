package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-fleet/kubectl-fleet/internal/githubtest"
	"github.com/kubectl-fleet/kubectl-fleet/internal/otlptest"
	"github.com/kubectl-fleet/kubectl-fleet/internal/slacktest"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/approval"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/notify"
)

// ceReceiver is a CloudEvents receiver on loopback (sdk-go's HTTP
// protocol and client, as a team's own receiver would be built) that
// refuses an event whose signature does not verify.
type ceReceiver struct {
	URL    string
	mu     sync.Mutex
	events []cloudevents.Event
	forged int
}

func newReceiver(t *testing.T, secret []byte) *ceReceiver {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rc := &ceReceiver{URL: "http://" + l.Addr().String() + "/events"}
	verify := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			if !notify.Verify(secret, body, r.Header.Get(notify.SignatureHeader)) {
				rc.mu.Lock()
				rc.forged++
				rc.mu.Unlock()
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			next.ServeHTTP(w, r)
		})
	}
	p, err := cehttp.New(cehttp.WithListener(l), cehttp.WithMiddleware(verify))
	if err != nil {
		t.Fatal(err)
	}
	c, err := cloudevents.NewClient(p)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.StartReceiver(ctx, func(ev cloudevents.Event) {
			rc.mu.Lock()
			defer rc.mu.Unlock()
			rc.events = append(rc.events, ev)
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return rc
}

// take returns the events received so far, and forgets them.
func (rc *ceReceiver) take() []cloudevents.Event {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := rc.events
	rc.events = nil
	return out
}

// lines are events as "seq type wave [cluster (gate)] outcome", after
// checking what every event of one release shares: its CloudEvents
// source, type and id, its release, and numbers from 1 in order.
func eventLines(t *testing.T, evs []cloudevents.Event, verb string) []string {
	t.Helper()
	var out []string
	release := ""
	for i, ce := range evs {
		var ev notify.Event
		if err := json.Unmarshal(ce.Data(), &ev); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if release == "" {
			release = ev.Release.ID
		}
		if ev.Release.ID != release || ev.Seq != i+1 || ce.ID() != fmt.Sprintf("%s.%d", release, i+1) || ce.Source() != "/kubectl-fleet/fleets/"+ev.Fleet || !strings.HasPrefix(ev.Fleet, "e2e") ||
			ce.Type() != "io.kubectl-fleet."+string(ev.Type)+".v1" || ev.Release.Verb != verb {
			t.Errorf("event %d: id %s, source %s, type %s, release %+v, seq %d", i, ce.ID(), ce.Source(), ce.Type(), ev.Release, ev.Seq)
		}
		line := fmt.Sprintf("%d %s", ev.Seq, ev.Type)
		if ev.Wave != "" {
			line += " " + ev.Wave
		}
		if f := ev.Failure; f != nil {
			line += " " + f.Cluster + " (" + f.Gate + ")"
		}
		if ev.Held != nil {
			line += " [" + ev.Held.Brake + ": " + ev.Held.Command + "]"
		}
		if rb := ev.Rollback; rb != nil {
			line += fmt.Sprintf(" automatic=%v %s", rb.Automatic, strings.Join(rb.Clusters, ","))
			if rb.Outcome != "" {
				line += ": " + rb.Outcome
			}
		}
		if ev.Outcome != "" {
			line += " " + ev.Outcome
		}
		out = append(out, line)
	}
	return out
}

// A release told to a real CloudEvents receiver, signed: held for an
// approval (and what approves it), then approved and everywhere, then a
// release whose canary fails its check and is rolled back. Each run's
// events arrive in order, numbered, before the command ends.
func TestNotifyWebhook(t *testing.T) {
	const ns = "e2e-notify"
	secret := []byte("e2e-hook-secret")
	rc := newReceiver(t, secret)
	chat := slacktest.New("xoxb-e2e")
	defer chat.Close()
	gh := githubtest.New("acme/shop", "ghs_e2e")
	defer gh.Close()
	// As in a GitHub Actions run on pull request 7, whose head is abc123.
	event := filepath.Join(t.TempDir(), "event.json")
	if err := os.WriteFile(event, []byte(`{"pull_request": {"number": 7, "head": {"sha": "abc123"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GITHUB_EVENT_PATH", event)
	t.Setenv("GITHUB_REPOSITORY", "acme/shop")
	// Each release is one trace, sent to a real OTLP/HTTP receiver.
	otlp := otlptest.New()
	defer otlp.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otlp.URL)
	_, alicePEM, alicePub, err := approval.GenerateKey("alice")
	if err != nil {
		t.Fatal(err)
	}
	dir := workdir(t, `apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: e2e-notify}
onFailure: rollback
notify:
  - name: ops
    webhook: {urlFrom: {file: hook.url}, secretFrom: {file: hook.key}}
  - name: chat
    slack: {channel: "#deploys", tokenFrom: {file: slack.token}, apiURL: "`+chat.URL+`"}
  - name: commits
    github: {tokenFrom: {file: gh.token}, apiURL: "`+gh.URL+`"}
groups:
  - name: staging
  - name: production
    approval: required
    batches:
      - {selector: canary=true, name: canary}
    verify:
      - {name: smoke, command: [./smoke.sh], timeout: 30s}
clusters:
  - {name: nt-stg, group: staging, context: fleet-c1}
  - {name: nt-b, group: production, context: fleet-c3}
  - {name: nt-a, group: production, context: fleet-c2, labels: {canary: "true"}}
apps:
  - {name: notified, manifests: app.yaml}
approvers:
  - {name: alice, publicKey: `+alicePub+`}
`, map[string]string{
		"app.yaml":    release(ns, "A"),
		"smoke.sh":    "#!/bin/sh\n[ ! -f fail ] || [ \"$FLEET_CLUSTER_NAME\" != nt-a ]\n",
		"hook.url":    rc.URL + "\n",
		"hook.key":    string(secret),
		"alice.pem":   string(alicePEM),
		"slack.token": "xoxb-e2e\n",
		"gh.token":    "ghs_e2e\n",
	})
	if err := os.Chmod(filepath.Join(dir, "smoke.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _, _ = fleet(t, dir, "delete", "--yes")
		for _, ctx := range []string{"fleet-c2", "fleet-c3"} { // alice's approvals
			_, _, _ = kubectl(t, "", "delete", "configmap", "approval.e2e-notify", "-n", "kubectl-fleet", "--context", ctx, "--ignore-not-found")
		}
	})
	approve := func() {
		t.Helper()
		if out, errOut, code := fleet(t, dir, "approve", "-g", "production", "--key", filepath.Join(dir, "alice.pem"), "--as", "alice", "--as-group", "system:masters"); code != 0 {
			t.Fatalf("approve: exit %d\n%s%s", code, out, errOut)
		}
	}
	approveCmd := "approve this release with kubectl fleet approve -g production (and this run's source flags)"
	steps := []struct {
		name    string
		before  func()
		code    int
		outcome string
		want    []string
	}{
		{"held for an approval", nil, 4, "held", []string{
			"1 release.started",
			"2 wave.started staging",
			"3 wave.finished staging",
			"4 wave.held production/canary [approval: " + approveCmd + "]",
			"5 approval.required production/canary [approval: " + approveCmd + "]",
			"6 release.finished held",
		}},
		{"approved: everywhere", approve, 0, "succeeded", []string{
			"1 release.started",
			"2 wave.started staging",
			"3 wave.finished staging",
			"4 wave.started production/canary",
			"5 wave.finished production/canary",
			"6 wave.started production/rest",
			"7 wave.finished production/rest",
			"8 release.finished succeeded",
		}},
		{"a failing canary, rolled back", func() {
			if err := writeFile(dir, "app.yaml", release(ns, "B")); err != nil {
				t.Fatal(err)
			}
			if err := writeFile(dir, "fail", ""); err != nil {
				t.Fatal(err)
			}
			approve()
		}, 6, "failed", []string{
			"1 release.started",
			"2 wave.started staging",
			"3 wave.finished staging",
			"4 wave.started production/canary",
			"5 cluster.failed production/canary nt-a (check smoke)",
			"6 wave.finished production/canary",
			"7 release.finished failed",
			"8 rollback automatic=true nt-a,nt-stg",
			"9 rollback automatic=true nt-a,nt-stg: succeeded",
		}},
	}
	seen, traceID := 0, ""
	for _, step := range steps {
		if step.before != nil {
			step.before()
		}
		out, errOut, code := fleet(t, dir, "apply", "--yes")
		if code != step.code {
			t.Fatalf("%s: exit %d, want %d\n%s%s", step.name, code, step.code, out, errOut)
		}
		if strings.Contains(errOut, "notify") {
			t.Errorf("%s: a warning of the sink:\n%s", step.name, errOut)
		}
		evs := rc.take()
		if diff := cmp.Diff(step.want, eventLines(t, evs, "apply")); diff != "" {
			t.Errorf("%s: events (-want +got):\n%s", step.name, diff)
		}
		traceID = traceOf(t, evs)
		// Slack: one message per release, edited at most once a wave (3).
		var posts, edits int
		var last slacktest.Call
		for _, c := range chat.Calls()[seen:] {
			switch {
			case c.Method == "chat.update":
				edits++
				last = c
			case c.ThreadTS == "":
				posts++
				last = c
			}
		}
		seen = len(chat.Calls())
		if posts != 1 || edits > 3 || !strings.Contains(last.Text, "e2e-notify: apply "+step.outcome) {
			t.Errorf("%s: Slack got %d messages and %d edits, the last saying %q; want 1, at most 3, and %q", step.name, posts, edits, last.Text, step.outcome)
		}
	}
	if rc.forged != 0 {
		t.Errorf("%d events did not verify", rc.forged)
	}
	// GitHub: the pull request's head has a status per cluster, as the
	// last release left it; each group a deployment per release that
	// reached it; one comment, edited by each release.
	wantStatuses := map[string]string{
		"abc123 kubectl-fleet/e2e-notify/nt-stg": "success",
		"abc123 kubectl-fleet/e2e-notify/nt-a":   "failure",
		"abc123 kubectl-fleet/e2e-notify/nt-b":   "success", // release A's: release B never reached it
	}
	if diff := cmp.Diff(wantStatuses, gh.Statuses()); diff != "" {
		t.Errorf("commit statuses (-want +got):\n%s", diff)
	}
	var deploys []string
	for _, d := range gh.Deployments() {
		deploys = append(deploys, d.Environment+" "+d.Ref+": "+strings.Join(d.States, ","))
	}
	wantDeploys := []string{
		"staging abc123: in_progress,success", "production abc123: queued",
		"staging abc123: in_progress,success", "production abc123: in_progress,success",
		"staging abc123: in_progress,success", "production abc123: in_progress,failure",
	}
	if diff := cmp.Diff(wantDeploys, deploys); diff != "" {
		t.Errorf("deployments (-want +got):\n%s", diff)
	}
	if c := gh.Comments(7); len(c) != 1 || !strings.Contains(c[0], "### e2e-notify: apply failed, rolled back automatically") || !strings.Contains(c[0], "| nt-a | failed |") {
		t.Errorf("the pull request's comments: %q", c)
	}
	// The last release's trace, named in its events: the release, its
	// waves, each cluster under its wave with its stages and its check,
	// the canary's failure.
	spans := map[string]otlptest.Span{}
	for _, sp := range otlp.Spans() {
		if sp.TraceID == traceID {
			spans[sp.SpanID] = sp
		}
	}
	var drawn []string
	for _, sp := range spans {
		parent := "-"
		if p, ok := spans[sp.ParentSpanID]; ok {
			parent = p.Name
		}
		if strings.HasPrefix(sp.Name, "cluster ") || strings.HasPrefix(sp.Name, "release ") || strings.HasPrefix(sp.Name, "wave ") ||
			strings.HasPrefix(sp.Name, "check ") || strings.HasPrefix(sp.Name, "wait ") {
			drawn = append(drawn, fmt.Sprintf("%s > %s (error %v)", parent, sp.Name, sp.Error))
		}
	}
	slices.Sort(drawn)
	wantSpans := []string{
		"- > release e2e-notify (error true)",
		"cluster nt-a > check smoke (error true)",
		"release e2e-notify > wave production/canary (error true)",
		"release e2e-notify > wave staging (error false)",
		"wave production/canary > cluster nt-a (error true)",
		"wave staging > cluster nt-stg (error false)",
	}
	if diff := cmp.Diff(wantSpans, drawn); diff != "" {
		t.Errorf("the trace %s (-want +got):\n%s", traceID, diff)
	}
	// A rollback asked for is a release too, whose verb says so.
	if out, errOut, code := fleet(t, dir, "rollback", "--yes", "-c", "nt-stg"); code != 0 {
		t.Fatalf("rollback: exit %d\n%s%s", code, out, errOut)
	}
	wantRollback := []string{"1 release.started", "2 wave.started staging", "3 wave.finished staging", "4 release.finished succeeded"}
	if diff := cmp.Diff(wantRollback, eventLines(t, rc.take(), "rollback")); diff != "" {
		t.Errorf("rollback: events (-want +got):\n%s", diff)
	}
	if c := gh.Comments(7); len(c) != 1 || !strings.Contains(c[0], "### e2e-notify: rollback succeeded") {
		t.Errorf("the pull request's comments after the rollback: %q", c)
	}
}

// A sink never breaks a rollout: one that is down, answers 500 or hangs
// costs the run its bounded time and one warning; required: true makes
// the miss exit 7, the rollout itself done.
func TestNotifyFaults(t *testing.T) {
	const ns = "e2e-notify-faults"
	down, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	downURL := "http://" + down.Addr().String() + "/x"
	down.Close()
	hang := make(chan struct{})
	slow := httptestServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	})
	defer close(hang)
	failing := httptestServer(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
	for _, tt := range []struct {
		name, url string
		required  bool
		code      int
		warning   string
	}{
		{"down", downURL, false, 0, "Warning: notify ops: 4 of 4 events not sent: Post " + strings.TrimSuffix(downURL, "/x") + ": dial tcp"},
		{"500", failing + "/x", false, 0, "Warning: notify ops: 4 of 4 events not sent: POST " + failing + ": 500 Internal Server Error"},
		{"hangs", slow + "/x", false, 0, "Warning: notify ops: 4 of 4 events not sent"},
		{"down, required", downURL, true, 7, "Warning: notify ops: 4 of 4 events not sent"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ns := ns + "-" + strings.NewReplacer(" ", "", ",", "-").Replace(tt.name)
			dir := workdir(t, fmt.Sprintf(`apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: e2e}
notify:
  - {name: ops, required: %v, timeout: 1s, webhook: {url: %q}}
groups:
  - name: staging
clusters:
  - {name: nf-stg, group: staging, context: fleet-c1}
apps:
  - {name: notified, manifests: app.yaml}
`, tt.required, tt.url), map[string]string{"app.yaml": release(ns, "1")})
			t.Cleanup(func() { _, _, _ = fleet(t, dir, "delete", "--yes") })
			start := time.Now()
			out, errOut, code := fleet(t, dir, "apply", "--yes")
			took := time.Since(start)
			if code != tt.code || strings.Count(errOut, "Warning: notify ops") != 1 || !strings.Contains(errOut, tt.warning) {
				t.Errorf("exit %d, want %d and one warning %q:\n%s%s", code, tt.code, tt.warning, out, errOut)
			}
			if runs(t, "fleet-c1", ns) != "1" {
				t.Error("the release was not applied")
			}
			// Each attempt is bounded (1s, 4 attempts with backoff), and
			// the run's end waits at most 10s for what is queued.
			if took > 40*time.Second {
				t.Errorf("the run took %v", took)
			}
		})
	}
}

// httptestServer serves handler on loopback until the test ends, and
// returns its URL.
func httptestServer(t *testing.T, handler http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	return srv.URL
}

// vet --server --notify-test sends each sink a test event and says which
// took it: a webhook's receiver, Slack, Teams and GitHub (a read) take
// it; a sink that is down does not, and vet exits 1.
func TestNotifyVetTest(t *testing.T) {
	secret := []byte("vet-secret")
	rc := newReceiver(t, secret)
	chat := slacktest.New("xoxb-vet")
	defer chat.Close()
	gh := githubtest.New("acme/shop", "ghs_vet")
	defer gh.Close()
	var cards sync.WaitGroup
	cards.Add(1)
	teams := httptestServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
		cards.Done()
	})
	down, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	downURL := "http://" + down.Addr().String()
	down.Close()
	dir := workdir(t, `apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: e2e}
notify:
  - {name: hook, webhook: {urlFrom: {file: hook.url}, secretFrom: {file: hook.key}}}
  - {name: chat, slack: {channel: "#deploys", tokenFrom: {file: slack.token}, apiURL: "`+chat.URL+`"}}
  - {name: commits, github: {repository: acme/shop, tokenFrom: {file: gh.token}, apiURL: "`+gh.URL+`"}}
  - {name: teams, teams: {urlFrom: {file: teams.url}}}
  - {name: gone, timeout: 2s, webhook: {url: "`+downURL+`"}}
groups:
  - name: staging
clusters:
  - {name: nv-stg, group: staging, context: fleet-c1}
apps:
  - {name: notified, manifests: app.yaml}
`, map[string]string{"app.yaml": release("e2e-notify-vet", "1"), "hook.url": rc.URL, "hook.key": string(secret),
		"slack.token": "xoxb-vet", "gh.token": "ghs_vet", "teams.url": teams + "/workflows/x?sig=abc"})
	if out, errOut, code := fleet(t, dir, "vet", "--notify-test"); code != 1 || !strings.Contains(errOut, "--notify-test only works with --server") {
		t.Errorf("--notify-test without --server: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code := fleet(t, dir, "vet", "--server", "--notify-test")
	want := []string{"notify hook: test event sent", "notify chat: test event sent", "notify commits: test event sent", "notify teams: test event sent",
		"notify gone: test event not sent: Post " + downURL + ": dial tcp"}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("vet does not say %q:\n%s%s", w, out, errOut)
		}
	}
	if code != 1 || !strings.Contains(errOut, "1 of 5 notify sinks did not take the test event") {
		t.Errorf("exit %d, want 1 and the count:\n%s", code, errOut)
	}
	cards.Wait()
	evs := rc.take()
	if len(evs) != 1 || evs[0].Type() != "io.kubectl-fleet.test.v1" || rc.forged != 0 {
		t.Errorf("the receiver got %d events (%d forged)", len(evs), rc.forged)
	}
	if calls := chat.Calls(); len(calls) != 1 || !strings.Contains(calls[0].Text, "a test of this sink") {
		t.Errorf("Slack got %+v", calls)
	}
	if gh.Requests != 1 || len(gh.Statuses()) != 0 {
		t.Errorf("GitHub: %d requests, %d statuses written; want a read only", gh.Requests, len(gh.Statuses()))
	}
}

// traceOf is the trace ID a release's events name, the same in each.
func traceOf(t *testing.T, evs []cloudevents.Event) string {
	t.Helper()
	id := ""
	for i, ce := range evs {
		var ev notify.Event
		if err := json.Unmarshal(ce.Data(), &ev); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			id = ev.TraceID
		}
		if ev.TraceID != id || len(id) != 32 {
			t.Errorf("event %d names trace %q, the first %q", i, ev.TraceID, id)
		}
	}
	return id
}

// A run stopped by Ctrl-C sends what it can on its way out: its events
// up to the end of the release, which says it was interrupted.
func TestNotifyInterrupted(t *testing.T) {
	const ns = "e2e-notify-int"
	secret := []byte("int-secret")
	rc := newReceiver(t, secret)
	dir := workdir(t, `apiVersion: fleet/v1alpha1
kind: Fleet
metadata: {name: e2e}
notify:
  - {name: hook, webhook: {urlFrom: {file: hook.url}, secretFrom: {file: hook.key}}}
groups:
  - {name: staging, soak: 60s}
  - name: production
clusters:
  - {name: ni-stg, group: staging, context: fleet-c1}
  - {name: ni-prod, group: production, context: fleet-c2}
apps:
  - {name: notified, manifests: app.yaml}
`, map[string]string{"app.yaml": release(ns, "1"), "hook.url": rc.URL, "hook.key": string(secret)})
	t.Cleanup(func() { _, _, _ = fleet(t, dir, "delete", "--yes") })
	sent := false
	out, errOut, code := fleetStreaming(t, dir, func(line string, p *os.Process) {
		if strings.Contains(line, "soak started") && !sent {
			sent = true
			_ = p.Signal(os.Interrupt)
		}
	}, "apply", "--yes")
	if code != 130 || !sent {
		t.Fatalf("exit %d, want 130 (interrupted during the soak: %v)\n%s%s", code, sent, out, errOut)
	}
	lines := eventLines(t, rc.take(), "apply")
	if len(lines) < 3 || lines[0] != "1 release.started" || lines[1] != "2 wave.started staging" || !strings.HasSuffix(lines[len(lines)-1], "release.finished interrupted") {
		t.Errorf("events of the interrupted run: %q", lines)
	}
}
