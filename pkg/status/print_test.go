package status_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/runner"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/status"
)

// printed is three clusters of group prod: one runs web r2 verified with
// a drifted object, one web r3 (and cache, which nothing rendered), one
// could not be read; and c4 of group dev was skipped.
func printed() []status.Cluster {
	web := func(rev int, objs ...status.Object) status.App {
		return status.App{App: "web", Revision: rev, LastApplied: "2025-01-02T03:04:05Z", Objects: objs}
	}
	ok := status.Object{Ref: "configmap/a", Health: status.Current}
	drifted := status.Object{Ref: "deployment/web", Health: status.InProgress, Message: "1 of 2 ready", Drifted: true}
	c1 := web(2, ok, drifted)
	c1.Verification = &revision.Verification{State: revision.Verified}
	c1.Source = "abc1234"
	return []status.Cluster{
		{Name: "c1", Group: "prod", Apps: []status.App{c1}},
		{Name: "c2", Group: "prod", Apps: []status.App{web(3, ok), {App: "cache", Objects: []status.Object{{Ref: "configmap/c", Health: status.NotFound}}}}},
		{Name: "c3", Group: "prod", Err: errors.New("app web: forbidden")},
		{Name: "c4", Group: "dev", Skipped: true, Err: errors.New("unreachable")},
	}
}

func TestWriteMatrix(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := status.WriteMatrix(&out, &errOut, []string{"web", "db"}, printed()); err != nil {
		t.Fatal(err)
	}
	want := `CLUSTER   GROUP   WEB                                          DB        CACHE
c1        prod    1 of 2 InProgress, 1 drifted (r2 verified)   -         -
c2        prod    1 of 1 Current (r3)                          -         1 of 1 NotFound
c3        prod    Error                                        Error     Error
c4        dev     Skipped                                      Skipped   Skipped
drifted: edited live since the last apply (apply puts it back; status -o wide names the objects)
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
	if want := "error: c3: app web: forbidden\nskipped: c4: unreachable\n"; errOut.String() != want {
		t.Errorf("stderr %q, want %q", errOut.String(), want)
	}
	out.Reset()
	errOut.Reset()
	if err := status.WriteMatrix(&out, &errOut, nil, nil); err != nil || out.String() != "CLUSTER   GROUP   \n" || errOut.String() != "No apps found.\n" {
		t.Errorf("no apps: %v, stdout %q, stderr %q", err, out.String(), errOut.String())
	}
}

func TestSkew(t *testing.T) {
	want := []status.Skew{{Type: "skew", Group: "prod", App: "web", Clusters: []status.ClusterRevision{{Cluster: "c1", Revision: "r2 (abc1234)"}, {Cluster: "c2", Revision: "r3"}}}}
	got := status.Skews(printed())
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if text := got[0].Text(); text != "Skew: app web differs within group prod: c1 r2 (abc1234), c2 r3" {
		t.Errorf("text %q", text)
	}
}

func TestWriteDetails(t *testing.T) {
	var out bytes.Buffer
	status.WriteDetails(func(cluster string) io.Writer {
		out.WriteString("[" + cluster + "]\n")
		return &out
	}, printed())
	want := `[c1]
web: 1 of 2 InProgress, 1 drifted, revision 2 verified from abc1234, last applied 2025-01-02T03:04:05Z
  configmap/a Current
  deployment/web InProgress: 1 of 2 ready (drifted: edited live since the last apply)
[c2]
web: 1 of 1 Current, revision 3, last applied 2025-01-02T03:04:05Z
  configmap/a Current
cache: 1 of 1 NotFound, no revision, last applied never
  configmap/c NotFound
[c3]
error: app web: forbidden
[c4]
error: unreachable
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestLines: status -o json says a cluster that could not be read, then
// each app, with its group and batch; the report is healthy only when
// every cluster was read and every app is Current.
func TestLines(t *testing.T) {
	cs := printed()
	cs[0].Batch = "canary"
	var got []string
	for _, l := range status.Lines(cs) {
		got = append(got, l.Type+" "+l.Cluster+" "+l.Group+"/"+l.Batch+" "+l.State+" "+l.Error)
	}
	want := []string{"app c1 prod/canary InProgress ", "app c2 prod/ Current ", "app c2 prod/ NotFound ", "cluster c3 prod/ Error app web: forbidden", "cluster c4 dev/ Error unreachable"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	ok := []status.Cluster{{Name: "c2", Apps: cs[1].Apps[:1]}}
	if !status.Healthy(nil, ok) || status.Healthy(nil, cs[:1]) {
		t.Error("Healthy: want true for every app Current, false for one InProgress")
	}
	if status.Healthy([]runner.Outcome{{Cluster: "c2", State: runner.Failed}}, ok) {
		t.Error("Healthy: a cluster not read is not healthy")
	}
}
