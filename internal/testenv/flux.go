package testenv

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
)

// Flux is Flux's source-controller and kustomize-controller running out
// of cluster against one cluster of an Env, as a delivered cluster's own
// Flux: its objects in their namespace, its artifacts served on loopback.
type Flux struct {
	env   *Env
	procs []*process
}

// FluxOptions say where Flux's binaries and CRDs are (the control
// plane's build: hack/controlplane/build.sh source-controller
// kustomize-controller, and its --print-flux-crds-dir).
type FluxOptions struct {
	BinDir, CRDs string
	// Namespace is the controllers' own (RUNTIME_NAMESPACE).
	Namespace string
}

// StartFlux installs Flux's CRDs on the cluster of context and starts its
// two controllers against it, stopped by Stop (or the Env's).
func (e *Env) StartFlux(ctx context.Context, kubeContext string, o FluxOptions) (*Flux, error) {
	i := -1
	for j, c := range e.Clusters {
		if c.Context == kubeContext {
			i = j
		}
	}
	if i < 0 {
		return nil, fmt.Errorf("no cluster has context %s", kubeContext)
	}
	kc, err := e.adminKubeconfig(i+1, e.Clusters[i].Direct)
	if err != nil {
		return nil, err
	}
	kubectl := func(args ...string) error {
		cmd := exec.CommandContext(ctx, filepath.Join(e.opts.BinDir, "kubectl"), append([]string{"--kubeconfig", kc}, args...)...)
		if args[len(args)-1] == "-" {
			cmd.Stdin = strings.NewReader("apiVersion: v1\nkind: Namespace\nmetadata: {name: " + o.Namespace + "}\n")
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := kubectl("apply", "--server-side", "-f", o.CRDs); err != nil {
		return nil, fmt.Errorf("installing Flux's CRDs: %w", err)
	}
	// Its namespace, as an installed Flux has it.
	if err := kubectl("apply", "--server-side", "-f", "-"); err != nil {
		return nil, err
	}
	if err := kubectl("wait", "--for", "condition=established", "--timeout", "60s", "crd/ocirepositories.source.toolkit.fluxcd.io", "crd/kustomizations.kustomize.toolkit.fluxcd.io"); err != nil {
		return nil, err
	}
	ports, err := FreePorts(3)
	if err != nil {
		return nil, err
	}
	addr := func(i int) string { return "127.0.0.1:" + strconv.Itoa(ports[i]) }
	name := "c" + strconv.Itoa(i+1)
	storage := filepath.Join(e.opts.Dir, name, "flux-storage")
	if err := os.MkdirAll(storage, 0o755); err != nil {
		return nil, err
	}
	f := &Flux{env: e}
	environ := []string{"KUBECONFIG=" + kc, "RUNTIME_NAMESPACE=" + o.Namespace}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"source-controller", []string{"--storage-path=" + storage, "--storage-addr=" + addr(0), "--storage-adv-addr=" + addr(0),
			"--metrics-addr=0", "--health-addr=" + addr(1), "--log-level=debug"}},
		{"kustomize-controller", []string{"--metrics-addr=0", "--health-addr=" + addr(2), "--log-level=debug", "--requeue-dependency=1s"}},
	} {
		p, err := e.startWith(c.name+"-"+name, filepath.Join(o.BinDir, c.name), environ, c.args...)
		if err != nil {
			f.Stop()
			return nil, err
		}
		f.procs = append(f.procs, p)
	}
	return f, nil
}

// Stop stops the controllers.
func (f *Flux) Stop() {
	for _, p := range f.procs {
		f.env.stopOwn(p, 10*time.Second)
	}
}

// Logs is the tail of each controller's log.
func (f *Flux) Logs() string {
	var b strings.Builder
	for _, p := range f.procs {
		data, _ := os.ReadFile(p.log)
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		fmt.Fprintf(&b, "--- %s (last lines):\n%s\n", p.name, strings.Join(lines[max(0, len(lines)-15):], "\n"))
	}
	return b.String()
}

// Registry is an OCI registry on loopback (go-containerregistry's, in
// memory), over plain HTTP, as a delivery's `insecure: true` reaches it.
type Registry struct {
	// Host is its host:port.
	Host string
	srv  *http.Server
}

// StartRegistry serves a registry on addr ("127.0.0.1:0" for any port),
// through wrap when set (to count or break requests).
func StartRegistry(addr string, wrap func(http.Handler) http.Handler) (*Registry, error) {
	var h http.Handler = ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	if wrap != nil {
		h = wrap(h)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("the registry on %s: %w", addr, err)
	}
	r := &Registry{Host: ln.Addr().String(), srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// Stop stops the registry.
func (r *Registry) Stop() { _ = r.srv.Close() }
