package roster

import (
	"bytes"
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/kube"
)

// TestWrite: the table says what it could not read instead of an empty
// server, labels as kubectl prints them, and the check's problems.
func TestWrite(t *testing.T) {
	rows := []Row{
		{Name: "prod-eu", Group: "production", Context: "eu", Server: "https://eu:6443", Labels: map[string]string{"tier": "web", "region": "eu"}},
		{Name: "prod-us", Group: "production", Context: "us", Kubeconfig: "env KUBECONFIG_US", unread: true},
		{Name: "edge", Group: "production", Context: "gone"},
		{Name: "dark", Group: "edge", Delivery: "oci://r.example.com/f"},
	}
	var out bytes.Buffer
	if err := Write(&out, rows, "", false); err != nil {
		t.Fatal(err)
	}
	want := `NAME      GROUP        CONTEXT   SERVER                                            LABELS
prod-eu   production   eu        https://eu:6443                                   region=eu,tier=web
prod-us   production   us        <kubeconfigFrom env KUBECONFIG_US>                <none>
edge      production   gone      <context not found>                               <none>
dark      edge         <none>    oci://r.example.com/f (published, not observed)   <none>
`
	if out.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", out.String(), want)
	}
	rows[0].Check = &kube.Probe{Version: "v1.37.1", UID: "u-1"}
	rows[1].Check = &kube.Probe{Problems: []string{"unreachable", "pinned uid differs"}}
	rows[2].Check = &kube.Probe{}
	out.Reset()
	if err := Write(&out, rows, "", true); err != nil {
		t.Fatal(err)
	}
	want = `NAME      GROUP        CONTEXT   SERVER                  VERSION   UID      STATUS
prod-eu   production   eu        https://eu:6443         v1.37.1   u-1      ok
prod-us   production   us                                <none>    <none>   unreachable; pinned uid differs
edge      production   gone                              <none>    <none>   ok
dark      edge         <none>    oci://r.example.com/f   <none>    <none>   published, not observed
`
	if out.String() != want {
		t.Errorf("checked table:\n%s\nwant:\n%s", out.String(), want)
	}
}
