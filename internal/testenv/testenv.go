// Package testenv starts real, independent Kubernetes API servers on
// loopback for end-to-end tests: one etcd, and one kube-apiserver per
// cluster with its own etcd prefix. It writes one kubeconfig with a context
// per cluster and stops every process it started, and only those.
package testenv

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Options configure an Env.
type Options struct {
	// BinDir holds etcd and kube-apiserver.
	BinDir string
	// Clusters is how many clusters to start.
	Clusters int
	// ContextPrefix names the contexts: prefix + "1", "2", … (default "fleet-c").
	ContextPrefix string
	// Dir is where data, certificates, logs and the kubeconfig go.
	Dir string
	// Ready bounds the wait for every server to be ready (default 90s).
	Ready time.Duration
	// Full is how many clusters, the first ones, are "full": with a
	// controller manager, a scheduler and a kwok fake node, so workloads
	// become healthy. The others have only an API server.
	Full int
	// KwokStages is kwok's stage configuration (needed when Full > 0).
	KwokStages string
	// Latency, when set, puts a Proxy delaying each direction by this much
	// in front of every API server; the kubeconfig points at the proxies.
	Latency time.Duration
}

// Cluster is one started API server.
type Cluster struct {
	// Context is the cluster's context in the kubeconfig.
	Context string
	// Server is the URL the kubeconfig points at: the API server, or its
	// latency proxy.
	Server string
	// Direct is the API server's own URL.
	Direct string
}

// Env is a set of running clusters.
type Env struct {
	// Kubeconfig is the path of the kubeconfig with every cluster's context.
	Kubeconfig string
	// Clusters are the started clusters, in order.
	Clusters []Cluster
	// Token is the admin bearer token every cluster accepts.
	Token string

	opts    Options
	etcdURL string
	mu      sync.Mutex
	procs   []*process
	proxies []*Proxy
	// apiservers maps a cluster's Direct URL to its API server, so that a
	// test can kill it and start it again.
	apiservers map[string]*apiserver
	added      int
}

type apiserver struct {
	name, bin string
	args      []string
	proc      *process
}

type process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

// Start starts etcd and the API servers and waits until every one is ready.
// On error, whatever was started is stopped.
func Start(ctx context.Context, opts Options) (env *Env, err error) {
	if opts.ContextPrefix == "" {
		opts.ContextPrefix = "fleet-c"
	}
	if opts.Ready == 0 {
		opts.Ready = 90 * time.Second
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	started := &Env{opts: opts, Kubeconfig: filepath.Join(opts.Dir, "kubeconfig"), apiservers: map[string]*apiserver{}}
	env = started
	defer func() {
		if err != nil {
			// Not env: a failed start returns nil, and what it started
			// must still stop.
			started.Stop()
		}
	}()
	tok := make([]byte, 16)
	if _, err := rand.Read(tok); err != nil {
		return nil, err
	}
	env.Token = hex.EncodeToString(tok)
	if err := writeCredentials(opts.Dir, env.Token); err != nil {
		return nil, err
	}
	ports, err := FreePorts(2 + opts.Clusters)
	if err != nil {
		return nil, err
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	env.etcdURL = etcdURL
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	if _, err := env.start("etcd", filepath.Join(opts.BinDir, "etcd"),
		"--name=default", "--data-dir="+filepath.Join(opts.Dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL, "--unsafe-no-fsync", "--log-level=warn"); err != nil {
		return nil, err
	}
	for i := 1; i <= opts.Clusters; i++ {
		port := ports[1+i]
		direct, err := env.startAPIServer("c"+strconv.Itoa(i), port)
		if err != nil {
			return nil, err
		}
		c := Cluster{Context: opts.ContextPrefix + strconv.Itoa(i), Server: direct, Direct: direct}
		if opts.Latency > 0 {
			proxy, err := NewProxy(fmt.Sprintf("127.0.0.1:%d", port), opts.Latency)
			if err != nil {
				return nil, err
			}
			env.mu.Lock()
			env.proxies = append(env.proxies, proxy)
			env.mu.Unlock()
			c.Server = "https://" + proxy.Addr
		}
		env.Clusters = append(env.Clusters, c)
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Ready)
	defer cancel()
	for _, c := range env.Clusters {
		if err := env.waitReady(ctx, c.Direct+"/readyz"); err != nil {
			return nil, err
		}
	}
	for i := 1; i <= opts.Full && i <= len(env.Clusters); i++ {
		if err := env.startFull(ctx, i, env.Clusters[i-1].Direct); err != nil {
			return nil, err
		}
	}
	return env, env.writeKubeconfig()
}

// startAPIServer starts the API server of cluster name (its etcd prefix
// and folder) on port and returns its URL.
func (e *Env) startAPIServer(name string, port int) (string, error) {
	dir := filepath.Join(e.opts.Dir, name)
	a := &apiserver{name: "kube-apiserver-" + name, bin: filepath.Join(e.opts.BinDir, "kube-apiserver"), args: []string{
		"--etcd-servers=" + e.etcdURL, "--etcd-prefix=/" + name,
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port), "--cert-dir=" + filepath.Join(dir, "certs"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + filepath.Join(e.opts.Dir, "sa.key"),
		"--service-account-signing-key-file=" + filepath.Join(e.opts.Dir, "sa.key"),
		"--token-auth-file=" + filepath.Join(e.opts.Dir, "tokens.csv"),
		"--authorization-mode=RBAC", "--service-cluster-ip-range=10.0.0.0/24", "--allow-privileged=true"}}
	p, err := e.start(a.name, a.bin, a.args...)
	if err != nil {
		return "", err
	}
	a.proc = p
	direct := fmt.Sprintf("https://127.0.0.1:%d", port)
	e.mu.Lock()
	e.apiservers[direct] = a
	e.mu.Unlock()
	return direct, nil
}

// AddCluster starts one more API server, with its own etcd prefix, for a
// test that breaks it (Kill, Restart) without disturbing the others. Its
// context (ContextPrefix + "x" + n) is not in Kubeconfig: give it one with
// WriteKubeconfig. Stop stops it with the rest.
func (e *Env) AddCluster(ctx context.Context) (Cluster, error) {
	ports, err := FreePorts(1)
	if err != nil {
		return Cluster{}, err
	}
	e.mu.Lock()
	e.added++
	name := "x" + strconv.Itoa(e.added)
	e.mu.Unlock()
	direct, err := e.startAPIServer(name, ports[0])
	if err != nil {
		return Cluster{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, e.opts.Ready)
	defer cancel()
	if err := e.waitReady(ctx, direct+"/readyz"); err != nil {
		return Cluster{}, err
	}
	return Cluster{Context: e.opts.ContextPrefix + name, Server: direct, Direct: direct}, nil
}

// Kill kills a cluster's API server at once (SIGKILL), as a crash would:
// its connections are cut and its port refuses new ones.
func (e *Env) Kill(c Cluster) error {
	e.mu.Lock()
	a := e.apiservers[c.Direct]
	e.mu.Unlock()
	if a == nil {
		return fmt.Errorf("no API server at %s", c.Direct)
	}
	_ = a.proc.cmd.Process.Kill()
	<-a.proc.done
	e.forget(a.proc) // killed on purpose: not a process that "exited early"
	return nil
}

// stopOwn stops a process a test started and stops on purpose (Flux),
// and forgets it: its end is no process that "exited early".
func (e *Env) stopOwn(p *process, grace time.Duration) {
	stop(p, grace)
	e.forget(p)
}

// forget drops p from the processes whose early end is an error.
func (e *Env) forget(p *process) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.procs = slices.DeleteFunc(e.procs, func(q *process) bool { return q == p })
}

// Restart starts a killed cluster's API server again, on the same port
// with the same data, and waits until it is ready.
func (e *Env) Restart(ctx context.Context, c Cluster) error {
	e.mu.Lock()
	a := e.apiservers[c.Direct]
	e.mu.Unlock()
	if a == nil {
		return fmt.Errorf("no API server at %s", c.Direct)
	}
	select {
	case <-a.proc.done:
	default:
		return fmt.Errorf("the API server at %s is running", c.Direct)
	}
	p, err := e.start(a.name, a.bin, a.args...)
	if err != nil {
		return err
	}
	e.mu.Lock()
	a.proc = p
	e.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, e.opts.Ready)
	defer cancel()
	return e.waitReady(ctx, c.Direct+"/readyz")
}

func writeCredentials(dir, token string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(filepath.Join(dir, "sa.key"), pemKey, 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(token+`,admin,admin-uid,"system:masters"`+"\n"), 0o600)
}

// FreePorts asks the kernel for n free loopback ports, distinct.
func FreePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func (e *Env) start(name, bin string, args ...string) (*process, error) {
	return e.startWith(name, bin, nil, args...)
}

// startWith starts bin with environ added to this process's environment.
func (e *Env) startWith(name, bin string, environ []string, args ...string) (*process, error) {
	logPath := filepath.Join(e.opts.Dir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	if environ != nil {
		cmd.Env = append(os.Environ(), environ...)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, done: make(chan struct{}), log: logPath}
	go func() {
		_ = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	e.mu.Lock()
	e.procs = append(e.procs, p)
	e.mu.Unlock()
	return p, nil
}

// waitReady polls url with the admin token until it answers 200, a process
// exits, or ctx ends.
func (e *Env) waitReady(ctx context.Context, url string) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		req.Header.Set("Authorization", "Bearer "+e.Token)
		if resp, err := client.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if err := e.exited(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", url, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// exited reports a process that ended early, with the end of its log.
func (e *Env) exited() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, p := range e.procs {
		select {
		case <-p.done:
			return fmt.Errorf("%s exited early; its log:\n%s", p.name, tail(p.log))
		default:
		}
	}
	return nil
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(bytes.TrimSpace(b))
}

func (e *Env) writeKubeconfig() error { return WriteKubeconfig(e.Kubeconfig, e.Token, e.Clusters) }

// WriteKubeconfig writes a kubeconfig with a context per cluster, all
// with the same admin token, the first one current.
func WriteKubeconfig(path, token string, clusters []Cluster) error {
	cfg := clientcmdapi.NewConfig()
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: token}
	for i, c := range clusters {
		name := "c" + strconv.Itoa(i+1)
		cfg.Clusters[name] = &clientcmdapi.Cluster{Server: c.Server, InsecureSkipTLSVerify: true}
		cfg.Contexts[c.Context] = &clientcmdapi.Context{Cluster: name, AuthInfo: "admin"}
	}
	if len(clusters) > 0 {
		cfg.CurrentContext = clusters[0].Context
	}
	return clientcmd.WriteToFile(*cfg, path)
}

// PIDs are the process IDs of the running etcd and API servers (and of
// the controllers of full clusters), by name: "etcd",
// "kube-apiserver-c1", … make bench reads their memory and CPU.
func (e *Env) PIDs() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]int{}
	for _, p := range e.procs {
		select {
		case <-p.done:
		default:
			out[p.name] = p.cmd.Process.Pid
		}
	}
	return out
}

// Stop closes the latency proxies, stops the API servers, then etcd: SIGTERM, then SIGKILL after 10s.
// It only signals processes it started, and is safe to call twice.
func (e *Env) Stop() {
	e.mu.Lock()
	procs, proxies := e.procs, e.proxies
	e.procs, e.proxies = nil, nil
	e.mu.Unlock()
	for _, p := range proxies {
		p.Close()
	}
	for i := len(procs) - 1; i >= 0; i-- { // started last, stopped first
		stop(procs[i], 10*time.Second)
	}
}

func stop(p *process, grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}
