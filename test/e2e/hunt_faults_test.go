package e2e

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-fleet/kubectl-fleet/internal/testenv"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/inventory"
)

// The hunt's disrupted applies: a run killed mid-apply, two runs at once,
// and a run that loses its lease. Each run goes through a fault proxy of
// its own, whose log says which writes of which run reached the API
// server, and when. The step's applyAll then runs once more, undisturbed,
// and must succeed and leave the invariants holding.

// proxy starts a fault proxy in front of fleet-c1 and returns it with a
// kubeconfig whose context fleet-c1 goes through it.
func (h *hunter) proxy() (*testenv.FaultProxy, string) {
	p, err := testenv.NewFaultProxy(env.Clusters[0].Direct)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(p.Close)
	kc := filepath.Join(h.t.TempDir(), "kubeconfig")
	must(h.t, env.WriteKubeconfig(kc, map[string]testenv.ContextSpec{"fleet-c1": {Server: p.URL}}))
	return p, kc
}

// isWrite matches a request that may change what the server holds, a
// lease's excepted.
func isWrite(r *http.Request) bool {
	return r.Method != http.MethodGet && !strings.Contains(r.URL.Path, "/leases")
}

// disrupted applies w's renders (changed from before) in runs that do
// not finish as they should, as the step says, and checks what must hold
// even then: what no app owns stays untouched; no two runs write one app
// at once.
func (h *hunter) disrupted(ctx context.Context, w *world, s step, before map[string]map[string]spec) error {
	w.learnSecrets()
	h.untilDeleted(ctx, w, w.snapshot())
	args := []string{"-F", w.write(h.t, "fleet.yaml", false, false), "apply", "--prune", "--allow-empty", "--yes", "--force-conflicts"}
	var err error
	switch s.Kind {
	case "kill":
		err = h.kill(w, s, args)
	case "two-runs":
		err = h.twoRuns(w, before, args)
	case "lost-lease":
		err = h.lostLease(w, s, before, args)
	}
	if err != nil {
		return err
	}
	return h.untouched(ctx, w)
}

// kill stops a run at its s.Writes-th write (held by the proxy) with
// s.Signal: SIGINT as Ctrl-C (the run cancels, releases its locks and
// exits; the held write may still land), or SIGKILL (it never does).
func (h *hunter) kill(w *world, s step, args []string) error {
	p, kc := h.proxy()
	defer p.Close()
	p.After(s.Writes-1, isWrite, testenv.Hung)
	r := startCmd(h.t, h.command(kc, args...))
	for p.Held() == 0 && !r.exited(10*time.Millisecond) {
	}
	sig := syscall.SIGKILL
	if s.Signal == "SIGINT" {
		sig = syscall.SIGINT
	}
	_ = r.cmd.Process.Signal(sig)
	if sig == syscall.SIGINT {
		must(h.t, p.Restore()) // it may clean up: release its locks
	}
	if !r.exited(time.Minute) {
		return fmt.Errorf("the run still runs a minute after %s", s.Signal)
	}
	must(h.t, p.Restore())
	out, errOut := r.output()
	h.log(args, out+errOut, r.code)
	return w.secretFree(out + errOut)
}

// twoRuns applies the same renders in two runs started at once. Each
// app's lock lets one of them write it; the other fails that app at once
// ("locked by") or finds it done.
func (h *hunter) twoRuns(w *world, before map[string]map[string]spec, args []string) error {
	var runs [2]*run
	var logs [2]*testenv.FaultProxy
	for i := range runs {
		p, kc := h.proxy()
		defer p.Close()
		logs[i], runs[i] = p, startCmd(h.t, h.command(kc, args...))
	}
	for i, r := range runs {
		if !r.exited(3 * time.Minute) {
			return fmt.Errorf("run %d of two at once did not finish in 3 minutes", i+1)
		}
		out, errOut := r.output()
		if err := w.secretFree(out + errOut); err != nil {
			return err
		}
		if r.code != 0 && (r.code != 1 || !strings.Contains(out, "locked by")) {
			return fmt.Errorf("apply: run %d of two at once: exit %d, not for a lock\n%s%s", i+1, r.code, out, errOut)
		}
	}
	return w.atOnce(before, logs[0].Requests(), logs[1].Requests())
}

// lostLease cuts a run (--lock-duration 3s) off the server at its
// s.Writes-th write of an app's object, its requests held, not failed, as in a network
// partition; a second run (--lock-timeout) takes its leases over once
// they expire and applies. Only then are the first run's held requests
// let go: a run that lost its lease must have cancelled them (none of
// its writes reaches the server then), and must stop.
func (h *hunter) lostLease(w *world, s step, before map[string]map[string]spec, args []string) error {
	p0, kc0 := h.proxy()
	defer p0.Close()
	p1, kc1 := h.proxy()
	defer p1.Close()
	// The s.Writes-th write of an app's object: sent under that app's
	// lease, held by the first run then.
	appOf := w.pathsOf(before)
	p0.After(s.Writes-1, func(r *http.Request) bool { _, ok := appOf[r.URL.Path]; return ok && r.Method != http.MethodGet }, testenv.Hung)
	first := startCmd(h.t, h.command(kc0, append(args, "--lock-duration", "3s")...))
	for p0.Held() == 0 && !first.exited(10*time.Millisecond) {
	}
	second := startCmd(h.t, h.command(kc1, append(args, "--lock-timeout", "1m")...))
	if !second.exited(3 * time.Minute) {
		return fmt.Errorf("the run taking over did not finish in 3 minutes")
	}
	out, errOut := second.output()
	if err := w.secretFree(out + errOut); err != nil {
		return err
	}
	if second.code != 0 {
		return fmt.Errorf("apply: the run taking over a lost lease: exit %d\n%s%s", second.code, out, errOut)
	}
	healed := time.Now()
	must(h.t, p0.Restore())
	if !first.exited(time.Minute) {
		return fmt.Errorf("the run that lost its lease still runs a minute after the partition healed")
	}
	out, errOut = first.output()
	if err := w.secretFree(out + errOut); err != nil {
		return err
	}
	for _, r := range p0.Requests() {
		if _, ok := appOf[r.Path]; ok && r.Method != http.MethodGet && r.Forwarded.After(healed) {
			return fmt.Errorf("the run that lost its lease wrote once the partition healed, after another run took over: %s %s\n%s%s", r.Method, r.Path, out, errOut)
		}
	}
	return w.atOnce(before, p0.Requests(), p1.Requests())
}

// atOnce fails when two runs' writes of one app overlap in time: for
// each app, the writes of one run that reached the server (its objects,
// its inventory) must all come before or all after the other's.
func (w *world) atOnce(before map[string]map[string]spec, logs ...[]testenv.Request) error {
	appOf := w.pathsOf(before)
	type span struct{ from, to time.Time }
	spans := make([]map[string]span, len(logs))
	for i, log := range logs {
		spans[i] = map[string]span{}
		for _, r := range log {
			app, ok := appOf[r.Path]
			if r.Method == http.MethodGet || r.Forwarded.IsZero() || !ok {
				continue
			}
			sp, seen := spans[i][app]
			if !seen {
				sp.from = r.Forwarded
			}
			sp.to = r.Forwarded
			spans[i][app] = sp
		}
	}
	for app, a := range spans[0] {
		b, ok := spans[1][app]
		if ok && !a.to.Before(b.from) && !b.to.Before(a.from) {
			return fmt.Errorf("two runs wrote app %s at once: run 1 from %s to %s, run 2 from %s to %s", app,
				a.from.Format("15:04:05.000"), a.to.Format("15:04:05.000"), b.from.Format("15:04:05.000"), b.to.Format("15:04:05.000"))
		}
	}
	return nil
}

// pathsOf maps the API paths of what the apps write to the app: each
// key to the app that renders it now (or rendered it before, when none
// does), each app's base ConfigMap and its inventory. A key moving
// between apps is left out: both apps' runs may write it (the one it
// leaves hands it over, with the resourceVersion it read as a
// precondition), each under its own app's lock.
func (w *world) pathsOf(before map[string]map[string]spec) map[string]string {
	out := map[string]string{}
	cm := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	for _, a := range w.apps {
		out[restPath(cm, w.ns("one"), "base-"+a)] = a
		out[restPath(cm, "kubectl-fleet", inventory.ParentName(w.app(a)))] = a
	}
	moving := map[string]bool{}
	for _, renders := range []map[string]map[string]spec{before, w.render} {
		for a, r := range renders {
			for key := range r {
				gvr, ns, name := w.ref(key)
				p := restPath(gvr, ns, name)
				if app, ok := out[p]; ok && app != a {
					moving[p] = true
				}
				out[p] = a
			}
		}
	}
	for p := range moving {
		delete(out, p)
	}
	return out
}

// restPath is the API path of an object.
func restPath(gvr schema.GroupVersionResource, ns, name string) string {
	p := "/apis/" + gvr.Group + "/" + gvr.Version
	if gvr.Group == "" {
		p = "/api/" + gvr.Version
	}
	if ns != "" {
		p += "/namespaces/" + ns
	}
	return p + "/" + gvr.Resource + "/" + name
}
