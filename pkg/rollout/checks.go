package rollout

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/approval"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/render"
)

// checkRun are a group's verify checks for one cluster: commands run on
// this machine, one after the other, from Dir, with KUBECONFIG set to
// Kubeconfig (one that reaches only the cluster) and Env added. They are
// a gate: each outcome is an event and goes into Gates.
type checkRun struct {
	Dir        string
	Checks     []fleet.Check
	Kubeconfig string
	Env        []string
	// Secret names environment variables that hold credentials
	// (kubeconfigFrom.env, signing.keyEnv): a check never inherits them,
	// nor any of secretFamilies, nor a KUBECONFIG* variable but its own
	// KUBECONFIG.
	Secret []string
	// Out gets the checks' output.
	Out   io.Writer
	Emit  Sink
	Gates *gateSet
	// Stage, if set, is told which check runs.
	Stage func(stage string)
}

// Run runs the checks on cluster and returns the first failure; the
// checks after it do not run.
func (c checkRun) Run(ctx context.Context, cluster string) error {
	for _, chk := range c.Checks {
		if c.Stage != nil {
			c.Stage("check " + chk.Name)
		}
		start := time.Now()
		err := c.run(ctx, chk)
		c.Emit(CheckEvent{Type: typeCheck, Cluster: cluster, Check: chk.Name, State: passed(err), Seconds: time.Since(start).Seconds(), Error: errString(err)})
		if err != nil {
			c.Gates.Fail("", "check "+chk.Name+": "+oneLine(err))
			return fmt.Errorf("check %s: %w", chk.Name, err)
		}
		c.Gates.Pass("", "check "+chk.Name)
	}
	return nil
}

// passed is a gate's outcome in a word.
func passed(err error) string {
	if err != nil {
		return "failed"
	}
	return "passed"
}

// run runs one check within its timeout.
func (c checkRun) run(ctx context.Context, chk fleet.Check) error {
	timeout := chk.Timeout
	if timeout == 0 {
		timeout = fleet.DefaultCheckTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	program := chk.Command[0]
	if strings.ContainsRune(program, '/') && !filepath.IsAbs(program) {
		program = filepath.Join(c.Dir, program)
	}
	cmd := exec.CommandContext(ctx, program, chk.Command[1:]...)
	cmd.Dir = c.Dir
	cmd.Env = append(c.inherited(os.Environ()), append(slices.Clone(c.Env), "KUBECONFIG="+c.Kubeconfig)...)
	cmd.WaitDelay = 5 * time.Second
	cmd.Stdout, cmd.Stderr = c.Out, c.Out
	err := cmd.Run()
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return fmt.Errorf("did not finish within %s", timeout)
	case err != nil:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Errorf("exit status %d", ee.ExitCode())
		}
		return err
	}
	return nil
}

var notEnvChar = regexp.MustCompile(`[^A-Z0-9_]`)

// checkEnv describes the cluster to a check with the variables its
// manifests get (render.VariablesOf): FLEET_CLUSTER_NAME, _GROUP, _CONTEXT,
// FLEET_NAME, and every scalar attribute as FLEET_ATTR_<KEY>.
func checkEnv(c render.Cluster) []string {
	vars := render.VariablesOf(&c)
	env := []string{"FLEET_CLUSTER_NAME=" + c.Name, "FLEET_CLUSTER_GROUP=" + c.Group, "FLEET_CLUSTER_CONTEXT=" + c.Context, "FLEET_NAME=" + c.Fleet}
	for _, k := range slices.Sorted(maps.Keys(c.Attributes)) {
		switch c.Attributes[k].(type) {
		case nil, map[string]any, []any:
		default:
			env = append(env, "FLEET_ATTR_"+notEnvChar.ReplaceAllString(strings.ToUpper(k), "_")+"="+vars.Text[k])
		}
	}
	return env
}

// inherited is what a check gets of env: all of it but the KUBECONFIG*
// variables, those that hold credentials (Secret), and every variable
// of a family that holds keys (secretFamilies).
func (c checkRun) inherited(env []string) []string {
	out := env[:0:0]
	for _, e := range env {
		name, _, _ := strings.Cut(e, "=")
		if !slices.ContainsFunc(secretFamilies, func(prefix string) bool { return strings.HasPrefix(name, prefix) }) && !slices.Contains(c.Secret, name) {
			out = append(out, e)
		}
	}
	return out
}

// secretFamilies start the names of variables no check inherits,
// whatever the fleet file says: kubeconfigs (a check gets its own),
// SOPS's keys and key commands (SOPS_AGE_KEY, SOPS_AGE_KEY_FILE,
// SOPS_AGE_KEY_CMD…), cosign's key and password (COSIGN_PASSWORD, the
// signing key's password), Vault's token (SOPS's hc_vault), and the
// approver's key.
var secretFamilies = []string{"KUBECONFIG", "SOPS_", "COSIGN_", "VAULT_TOKEN", approval.KeyEnv}

// runChecks runs the checks of the cluster's group (groups[].verify)
// through Checks, each on this machine with a kubeconfig that reaches
// only this cluster, and returns the first failure. What they print is
// said line by line (OutputEvent).
func (e *Engine) runChecks(ctx context.Context, c *fleet.Cluster, cluster render.Cluster, gates *gateSet) error {
	f := e.r.Fleet
	if !checks(f, c) {
		return nil
	}
	kubeconfig, remove, err := e.Connector.Kubeconfig(f, c)
	if err != nil {
		gates.Fail("", "checks: "+err.Error())
		return fmt.Errorf("checks: %w", err)
	}
	defer remove()
	out := &lines{say: func(line string) { e.emit(OutputEvent{Cluster: c.Name, Line: line}) }}
	emit := func(ev Event) {
		if _, ended := ev.(CheckEvent); ended {
			out.flush() // a last line without a newline, before the check's outcome
		}
		e.emit(ev)
	}
	return checkRun{
		Dir: f.Dir, Checks: f.Group(c.Group).Verify, Kubeconfig: kubeconfig, Env: checkEnv(cluster), Secret: credentialEnvs(f), Out: out,
		Emit: emit, Gates: gates, Stage: func(stage string) { e.emit(StageEvent{Cluster: c.Name, Stage: stage}) },
	}.Run(ctx, c.Name)
}

// credentialEnvs are the environment variables of the fleet that hold
// credentials: those its kubeconfigFrom reads kubeconfigs from (every
// cluster's and the defaults') and those its deliveries' signing keys
// are in (signing.keyEnv), those its analyses' credentials are in
// (auth), and its notify: sinks' (tokenFrom, urlFrom, secretFrom). A
// check, which reaches one cluster and signs nothing, gets none of them.
func credentialEnvs(f *fleet.Fleet) []string {
	var out []string
	add := func(name string) {
		if name != "" && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	signing := func(d *fleet.Delivery) {
		if d != nil && d.Signing != nil {
			add(d.Signing.KeyEnv)
		}
	}
	for i := range f.Clusters {
		if _, from := f.KubeconfigOf(&f.Clusters[i]); from != nil {
			add(from.Env)
		}
		signing(f.Clusters[i].Delivery)
	}
	for i := range f.Groups {
		signing(f.Groups[i].Delivery)
		for _, a := range f.Groups[i].Analyses() {
			if auth := a.Auth(); auth != nil {
				add(auth.BearerTokenEnv)
				add(auth.UsernameEnv)
				add(auth.PasswordEnv)
			}
		}
	}
	for _, name := range f.NotifyEnvs() {
		add(name)
	}
	return out
}

// lines is a writer that says each whole line it is given; flush says
// the last one when it has no newline.
type lines struct {
	say func(string)
	buf bytes.Buffer
}

func (l *lines) Write(p []byte) (int, error) {
	l.buf.Write(p)
	for {
		i := bytes.IndexByte(l.buf.Bytes(), '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(l.buf.Next(i + 1))
		l.say(strings.TrimSuffix(line, "\n"))
	}
}

func (l *lines) flush() {
	if l.buf.Len() > 0 {
		l.say(l.buf.String())
		l.buf.Reset()
	}
}
