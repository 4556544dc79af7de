package kube

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	diskcached "k8s.io/client-go/discovery/cached/disk"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/homedir"
)

// Getter is a cluster's genericclioptions.RESTClientGetter, as its
// ConfigFlags (ForCluster) would make it, but reading the kubeconfig
// through the process's cache of parsed kubeconfigs: a fleet of N
// clusters in one kubeconfig parses it once, not once per cluster (which
// grew as N², 49% of a 1,000-cluster no-op's CPU). The flags it honours
// are those ForCluster sets: --kubeconfig, --context, --cache-dir,
// --request-timeout, --as, --as-uid, --as-group and -n.
type Getter struct {
	flags *genericclioptions.ConfigFlags

	once      sync.Once
	loader    clientcmd.ClientConfig
	discovery Cached[discovery.CachedDiscoveryInterface]
	mapper    Cached[meta.RESTMapper]
}

var _ genericclioptions.RESTClientGetter = (*Getter)(nil)

// NewGetter reads the connection flags of one cluster.
func NewGetter(flags *genericclioptions.ConfigFlags) *Getter { return &Getter{flags: flags} }

// ToRawKubeConfigLoader is the cluster's kubeconfig, overridden by the
// flags, as kubectl's loader would give it.
func (g *Getter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	g.once.Do(func() {
		rules := rulesFor(str(g.flags.KubeConfig))
		cfg, err := parsedKubeconfigs.load(rules)
		if err != nil {
			g.loader = failedConfig{err}
			return
		}
		g.loader = sharedConfig{clientcmd.NewNonInteractiveClientConfig(*cfg, str(g.flags.Context), g.overrides(), rules)}
	})
	return g.loader
}

// rulesFor are kubectl's loading rules: path, or $KUBECONFIG's files
// then ~/.kube/config when it is "".
func rulesFor(path string) *clientcmd.ClientConfigLoadingRules {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.DefaultClientConfig = &clientcmd.DefaultClientConfig
	rules.ExplicitPath = path
	return rules
}

// overrides are the flags' overrides, as ConfigFlags makes them.
func (g *Getter) overrides() *clientcmd.ConfigOverrides {
	o := &clientcmd.ConfigOverrides{ClusterDefaults: clientcmd.ClusterDefaults}
	f := g.flags
	o.CurrentContext = str(f.Context)
	o.AuthInfo.Impersonate = str(f.Impersonate)
	o.AuthInfo.ImpersonateUID = str(f.ImpersonateUID)
	if f.ImpersonateGroup != nil {
		o.AuthInfo.ImpersonateGroups = *f.ImpersonateGroup
	}
	o.Context.Namespace = str(f.Namespace)
	o.Timeout = str(f.Timeout)
	return o
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// ToRESTConfig is the cluster's REST config, wrapped as the flags say
// (WrapConfigFn: a delivered cluster's only reads).
func (g *Getter) ToRESTConfig() (*rest.Config, error) {
	cfg, err := g.ToRawKubeConfigLoader().ClientConfig()
	switch {
	case clientcmd.IsEmptyConfig(err):
		return nil, genericclioptions.ErrEmptyConfig
	case err != nil:
		return nil, err
	}
	ownTransport(cfg)
	if g.flags.WrapConfigFn != nil {
		return g.flags.WrapConfigFn(cfg), nil
	}
	return cfg, nil
}

// ownTransport gives each client made from cfg a transport, and so
// connections, of its own. client-go shares one transport between every
// config of the same TLS settings, whatever the server: the clusters of
// a fleet whose certificates one CA signed, or that trust the system's
// roots, shared one, and closing a finished cluster's idle connections
// (Client.CloseIdleConnections) closed those of every cluster between
// two requests, and cancelled their dials. At 1,000 such clusters at
// once, 775 to 2,542 handshakes a run were thrown away. A config with
// a proxy function is not shared (client-go cannot compare functions);
// the one set is the one client-go uses when there is none. A cluster's
// clients are one per kind (Client's, its discovery's), each closed by
// Client.CloseIdleConnections.
func ownTransport(cfg *rest.Config) {
	if cfg.Proxy == nil {
		cfg.Proxy = http.ProxyFromEnvironment
	}
}

// closeIdle closes the idle connections of the getter's discovery, if it
// made one (it connects on a cache miss).
func (g *Getter) closeIdle() {
	dc, ok := g.discovery.Peek()
	if !ok {
		return
	}
	if rc, ok := dc.RESTClient().(*rest.RESTClient); ok && rc.Client != nil {
		utilnet.CloseIdleConnectionsFor(rc.Client.Transport)
	}
}

// ToDiscoveryClient is the cluster's discovery, cached on disk as
// kubectl caches it (--cache-dir, $KUBECACHEDIR, ~/.kube/cache), made
// once.
func (g *Getter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return g.discovery.Get(func() (discovery.CachedDiscoveryInterface, error) {
		cfg, err := g.ToRESTConfig()
		if err != nil {
			return nil, err
		}
		cfg.Burst, cfg.QPS = 300, 50 // kubectl's discovery burst and QPS
		return diskcached.NewCachedDiscoveryClientForConfig(cfg, g.discoveryCache(cfg).dir, filepath.Join(g.cacheDir(), "http"), discoveryTTL)
	})
}

// discoveryTTL is how long kubectl's disk cache of discovery is used.
const discoveryTTL = 6 * time.Hour

// cacheDir is kubectl's --cache-dir.
func (g *Getter) cacheDir() string {
	if d := str(g.flags.CacheDir); d != "" {
		return d
	}
	return defaultCacheDir()
}

// discoveryCache is where the discovery of the cluster cfg reaches is
// cached on disk.
func (g *Getter) discoveryCache(cfg *rest.Config) diskCache {
	return diskCache{dir: discoveryCacheDir(filepath.Join(g.cacheDir(), "discovery"), cfg.Host), ttl: discoveryTTL}
}

// ToRESTMapper is the cluster's REST mapper over its discovery, made once
// (shared with the clusters that serve the same API surface: sharedMapper).
func (g *Getter) ToRESTMapper() (meta.RESTMapper, error) {
	return g.mapper.Get(func() (meta.RESTMapper, error) {
		dc, err := g.ToDiscoveryClient()
		if err != nil {
			return nil, err
		}
		cfg, err := g.ToRESTConfig()
		if err != nil {
			return nil, err
		}
		return newMapper(dc, g.discoveryCache(cfg)), nil
	})
}

// defaultCacheDir is the --cache-dir kubectl uses when none is given.
func defaultCacheDir() string {
	if d := os.Getenv("KUBECACHEDIR"); d != "" {
		return d
	}
	return filepath.Join(homedir.HomeDir(), ".kube", "cache")
}

var unsafeHostChars = regexp.MustCompile(`[^(\w/.)]`)

// discoveryCacheDir is kubectl's folder for a server's discovery, so that
// kubectl and kubectl fleet share it.
func discoveryCacheDir(parent, host string) string {
	host = strings.Replace(strings.Replace(host, "https://", "", 1), "http://", "", 1)
	return filepath.Join(parent, unsafeHostChars.ReplaceAllString(host, "_"))
}

// sharedConfig is a loader over a parsed kubeconfig others share: its raw
// config is a copy, for callers that change it (clientcmdapi.MinifyConfig).
type sharedConfig struct{ inner clientcmd.ClientConfig }

func (s sharedConfig) RawConfig() (clientcmdapi.Config, error) {
	raw, err := s.inner.RawConfig()
	return *raw.DeepCopy(), err
}
func (s sharedConfig) ClientConfig() (*rest.Config, error)  { return s.inner.ClientConfig() }
func (s sharedConfig) Namespace() (string, bool, error)     { return s.inner.Namespace() }
func (s sharedConfig) ConfigAccess() clientcmd.ConfigAccess { return s.inner.ConfigAccess() }

// failedConfig is a loader whose kubeconfig could not be read.
type failedConfig struct{ err error }

func (f failedConfig) RawConfig() (clientcmdapi.Config, error) { return clientcmdapi.Config{}, f.err }
func (f failedConfig) ClientConfig() (*rest.Config, error)     { return nil, f.err }
func (f failedConfig) Namespace() (string, bool, error)        { return "", false, f.err }
func (f failedConfig) ConfigAccess() clientcmd.ConfigAccess    { return nil }

// kubeconfigCache holds parsed kubeconfigs, each under the files it was
// merged from and their size and modification time: a file replaced
// (rotated credentials, reconcile's next pass) is parsed again.
type kubeconfigCache struct {
	mu      sync.Mutex
	entries map[string]*kubeconfigEntry
}

type kubeconfigEntry struct {
	once  sync.Once
	stamp string
	cfg   *clientcmdapi.Config
	err   error
}

var parsedKubeconfigs = &kubeconfigCache{entries: map[string]*kubeconfigEntry{}}

// load returns rules' kubeconfig, parsed once per version of its files.
// The result is shared: read it, never change it.
func (c *kubeconfigCache) load(rules *clientcmd.ClientConfigLoadingRules) (*clientcmdapi.Config, error) {
	files := rules.GetLoadingPrecedence()
	if rules.ExplicitPath != "" {
		files = []string{rules.ExplicitPath}
	}
	key := strings.Join(files, "\x00")
	stamp := stampOf(files)
	c.mu.Lock()
	e := c.entries[key]
	if e == nil || e.stamp != stamp {
		e = &kubeconfigEntry{stamp: stamp}
		c.entries[key] = e
	}
	c.mu.Unlock()
	e.once.Do(func() { e.cfg, e.err = rules.Load() })
	return e.cfg, e.err
}

// stampOf is the modification time and size of each file (nothing for one
// that cannot be read).
func stampOf(files []string) string {
	var b strings.Builder
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil {
			b.WriteString(fi.ModTime().String() + "/" + strconv.FormatInt(fi.Size(), 10))
		}
		b.WriteString("\x00")
	}
	return b.String()
}
