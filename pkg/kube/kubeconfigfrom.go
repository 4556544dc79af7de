package kube

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
)

// DefaultKubeconfigCommandTimeout bounds a kubeconfigFrom command.
const DefaultKubeconfigCommandTimeout = time.Minute

// KubeconfigSources materializes the kubeconfigFrom of clusters: each
// source (an environment variable, a command) is read once, checked to be
// a kubeconfig, and written to a temporary file of mode 0600 in a folder of
// mode 0700, whose path the clusters then use as their kubeconfig.
// Cleanup removes the files. The content is never printed, not even in an
// error. The zero value is ready to use; it is safe for concurrent use.
type KubeconfigSources struct {
	// Timeout bounds one command; 0 means DefaultKubeconfigCommandTimeout.
	Timeout time.Duration

	mu      sync.Mutex
	folder  *tempFolder
	n       int
	closed  bool
	sources map[string]*materialized
}

type materialized struct {
	done chan struct{}
	path string
	err  error
}

// Resolve materializes the kubeconfigFrom of every cluster that has one
// (its own, else the defaults') and sets the cluster's ResolvedKubeconfig,
// so that KubeconfigPath returns the file. Clusters naming the same source
// share one file; a source is read once however often Resolve is called.
// Every failure is returned, each naming its clusters and source.
func (s *KubeconfigSources) Resolve(ctx context.Context, f *fleet.Fleet, clusters []*fleet.Cluster) error {
	type use struct {
		from  *fleet.KubeconfigFrom
		users []*fleet.Cluster
	}
	var (
		keys  []string
		byKey = map[string]*use{}
	)
	for _, c := range clusters {
		_, from := f.KubeconfigOf(c)
		if from == nil || c.ResolvedKubeconfig != "" {
			continue
		}
		k := sourceKey(from)
		if byKey[k] == nil {
			byKey[k] = &use{from: from}
			keys = append(keys, k)
		}
		byKey[k].users = append(byKey[k].users, c)
	}
	var errs []error
	for _, k := range keys {
		u := byKey[k]
		m := s.materialize(ctx, f.Dir, k, u.from)
		if m.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", clusterNames(u.users), m.err))
			continue
		}
		for _, c := range u.users {
			c.ResolvedKubeconfig = m.path
		}
	}
	return errors.Join(errs...)
}

// Cleanup removes every file written, and makes later Resolve calls fail.
// It may be called more than once, and while Resolve runs.
func (s *KubeconfigSources) Cleanup() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.folder != nil {
		s.folder.remove()
		s.folder = nil
	}
}

// Refresh forgets every source read and removes the files written, so
// that the next Resolve reads each source again (a long-running reconcile
// picks up rotated credentials). Clients built on the old files must not
// be used after it. It does not undo Cleanup.
func (s *KubeconfigSources) Refresh() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.folder != nil {
		s.folder.remove()
		s.folder = nil
	}
	s.sources = nil
}

func sourceKey(from *fleet.KubeconfigFrom) string {
	if from.Env != "" {
		return "env\x00" + from.Env
	}
	return "command\x00" + strings.Join(from.Command, "\x00")
}

// materialize reads a source once; concurrent callers of the same source
// wait for the first.
func (s *KubeconfigSources) materialize(ctx context.Context, dir, key string, from *fleet.KubeconfigFrom) *materialized {
	s.mu.Lock()
	if m, ok := s.sources[key]; ok {
		s.mu.Unlock()
		<-m.done
		return m
	}
	m := &materialized{done: make(chan struct{})}
	if s.sources == nil {
		s.sources = map[string]*materialized{}
	}
	s.sources[key] = m
	s.mu.Unlock()
	defer close(m.done)

	var content []byte
	if from.Env != "" {
		content, m.err = fromEnv(from.Env)
	} else {
		content, m.err = s.fromCommand(ctx, dir, from.Command)
	}
	if m.err != nil {
		return m
	}
	cfg, err := parseKubeconfig(content, dir)
	if err != nil {
		m.err = fmt.Errorf("%s %w", describeSource(from), err)
		return m
	}
	m.path, m.err = s.WriteTemp(cfg)
	if m.err != nil {
		m.err = fmt.Errorf("%s: %w", describeSource(from), m.err)
	}
	return m
}

// describeSource names a source in errors: "kubeconfigFrom.env NAME",
// "kubeconfigFrom.command program".
func describeSource(from *fleet.KubeconfigFrom) string {
	if from.Env != "" {
		return "kubeconfigFrom.env " + from.Env
	}
	return "kubeconfigFrom.command " + from.Command[0]
}

func fromEnv(name string) ([]byte, error) {
	v, ok := os.LookupEnv(name)
	switch {
	case !ok:
		return nil, fmt.Errorf("kubeconfigFrom.env %s is not set", name)
	case strings.TrimSpace(v) == "":
		return nil, fmt.Errorf("kubeconfigFrom.env %s is empty", name)
	}
	return []byte(v), nil
}

// maxKubeconfig bounds what a command may print.
const maxKubeconfig = 16 << 20

// fromCommand runs a command from the fleet file's folder, with no
// standard input, and returns its standard output. Its error output is
// shown in the error only once scrubbed of anything like a credential.
func (s *KubeconfigSources) fromCommand(ctx context.Context, dir string, command []string) ([]byte, error) {
	timeout := s.Timeout
	if timeout == 0 {
		timeout = DefaultKubeconfigCommandTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	program := command[0]
	if strings.ContainsRune(program, '/') && !filepath.IsAbs(program) {
		program = filepath.Join(dir, program)
	}
	cmd := exec.CommandContext(ctx, program, command[1:]...)
	cmd.Dir = dir
	cmd.Stdin = nil // not the plugin's: a prompt must not wait for it
	var stdout, stderr boundedBuffer
	stdout.max, stderr.max = maxKubeconfig, 64<<10
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 2 * time.Second
	err := cmd.Run()
	name := "kubeconfigFrom.command " + command[0]
	var ee *exec.ExitError
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return nil, fmt.Errorf("%s: did not finish within %s%s", name, timeout, stderrTail(stderr.String()))
	case ctx.Err() != nil:
		return nil, fmt.Errorf("%s: interrupted", name)
	case errors.As(err, &ee):
		return nil, fmt.Errorf("%s: exit status %d%s", name, ee.ExitCode(), stderrTail(stderr.String()))
	case err != nil:
		return nil, fmt.Errorf("%s: %w", name, err)
	case stdout.overflow:
		return nil, fmt.Errorf("%s: printed more than %d MiB, too much for a kubeconfig", name, maxKubeconfig>>20)
	case len(bytes.TrimSpace(stdout.Bytes())) == 0:
		return nil, fmt.Errorf("%s: printed nothing%s", name, stderrTail(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// stderrTail is ": " and the last lines of a command's error output,
// scrubbed, on one line; or "".
func stderrTail(s string) string {
	var lines []string
	for _, l := range strings.Split(Scrub(s), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return ""
	}
	const keep = 10
	if len(lines) > keep {
		lines = append([]string{"…"}, lines[len(lines)-keep:]...)
	}
	return ": " + strings.Join(lines, "; ")
}

// parseKubeconfig accepts a kubeconfig, or its base64 (wrapped or not).
// Relative file references in it (certificate-authority: ca.crt) resolve
// from dir, the fleet file's folder.
func parseKubeconfig(content []byte, dir string) (*clientcmdapi.Config, error) {
	cfg, err := clientcmd.Load(content)
	if err != nil || len(cfg.Contexts) == 0 {
		compact := strings.Join(strings.Fields(string(content)), "")
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			decoded, derr := enc.DecodeString(compact)
			if derr != nil {
				continue
			}
			if cfg, err = clientcmd.Load(decoded); err == nil && len(cfg.Contexts) > 0 {
				break
			}
		}
	}
	if err != nil || len(cfg.Contexts) == 0 {
		// The parser's message is left out: it might quote the content.
		return nil, errors.New("is neither a kubeconfig (with at least one context) nor base64 of one")
	}
	origin := filepath.Join(dir, "kubeconfigFrom")
	for _, c := range cfg.Clusters {
		c.LocationOfOrigin = origin
	}
	for _, a := range cfg.AuthInfos {
		a.LocationOfOrigin = origin
	}
	if err := clientcmd.ResolveLocalPaths(cfg); err != nil {
		return nil, errors.New("has file references that cannot be resolved")
	}
	return cfg, nil
}

// WriteTemp stores a kubeconfig in a new file of mode 0600 in the run's
// folder of temporary kubeconfigs (tempFolder), removed by Cleanup (and
// Refresh), or by a later run if this one is killed.
func (s *KubeconfigSources) WriteTemp(cfg *clientcmdapi.Config) (string, error) {
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return "", errors.New("cannot be written back as a kubeconfig")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", errors.New("interrupted")
	}
	if s.folder == nil {
		if s.folder, err = newTempFolder(""); err != nil {
			return "", err
		}
	}
	s.n++
	path := filepath.Join(s.folder.path, fmt.Sprintf("kubeconfig-%d", s.n))
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	_, err = file.Write(data)
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return "", err
	}
	return path, nil
}

// boundedBuffer keeps the first max bytes written to it.
type boundedBuffer struct {
	bytes.Buffer
	max      int
	overflow bool
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); len(p) > room {
		b.overflow = true
		b.Buffer.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

// clusterNames is "cluster a" or "clusters a, b".
func clusterNames(cs []*fleet.Cluster) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	if len(names) == 1 {
		return "cluster " + names[0]
	}
	return "clusters " + abbreviate(names)
}
