package kube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gofrs/flock"
)

// A run's temporary kubeconfigs (a check's, a kubeconfigFrom's) hold
// credentials, so a run that ends removes them, even on SIGTERM or
// Ctrl-C. A run killed with SIGKILL (a CI job's timeout, the OOM killer)
// cannot: its folder is left, and the next run that writes temporary
// kubeconfigs removes it. So that such a folder is told from a live
// run's, its name carries its owner's process id
// (kubectl-fleet-kubeconfigs-<pid>-<random>), and the owner holds a lock
// on the file owner.lock in it for as long as it runs; the kernel
// releases the lock when the process dies, however it dies.

// tempPrefix starts the name of every run's folder of temporary
// kubeconfigs in the temporary folder ($TMPDIR).
const tempPrefix = "kubectl-fleet-kubeconfigs-"

// ownerLock is the file a folder's owner holds locked while it runs.
const ownerLock = "owner.lock"

// staleAfter is how old a folder nobody holds must be before a run
// takes it for stale although the process id in its name runs: that
// process may be another that got the id after the owner died, or the
// owner itself in the instant between making the folder and locking it.
const staleAfter = time.Minute

// tempFolder is a run's folder of temporary kubeconfigs, mode 0700.
type tempFolder struct {
	path string
	lock *flock.Flock
}

// newTempFolder removes the folders that killed runs left in parent
// ("" for os.TempDir()), then makes and locks this run's.
func newTempFolder(parent string) (*tempFolder, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	removeStale(parent, time.Now())
	dir, err := os.MkdirTemp(parent, tempPrefix+strconv.Itoa(os.Getpid())+"-*")
	if err != nil {
		return nil, err
	}
	lock := flock.New(filepath.Join(dir, ownerLock), flock.SetPermissions(0o600))
	// Another run's removeStale may hold it for an instant.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if ok, err := lock.TryLockContext(ctx, 10*time.Millisecond); err != nil || !ok {
		_ = os.RemoveAll(dir)
		return nil, errors.Join(fmt.Errorf("cannot lock %s", lock.Path()), err)
	}
	return &tempFolder{path: dir, lock: lock}, nil
}

// remove unlocks and removes the folder (unlocked first: Windows removes
// no file that is open).
func (t *tempFolder) remove() {
	_ = t.lock.Close()
	_ = os.RemoveAll(t.path)
}

// removeStale removes the folders of temporary kubeconfigs in parent
// whose owner is gone: nobody holds their lock, and the process named
// in them does not run or they are older than staleAfter. A folder it
// cannot read or lock (another user's) is left alone; so is one named
// as no run of this version names them.
func removeStale(parent string, now time.Time) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		pid, ok := ownerPID(e.Name())
		if !ok || !e.IsDir() || pid == os.Getpid() {
			continue
		}
		dir := filepath.Join(parent, e.Name())
		lock := flock.New(filepath.Join(dir, ownerLock))
		if ok, err := lock.TryLock(); err != nil || !ok {
			continue // held by its owner, or not ours to open
		}
		info, err := lock.Stat()
		old := err == nil && now.Sub(info.ModTime()) > staleAfter
		_ = lock.Close()
		if old || !running(pid) {
			_ = os.RemoveAll(dir)
		}
	}
}

// ownerPID reads the process id in the name of a folder of temporary
// kubeconfigs: kubectl-fleet-kubeconfigs-<pid>-<random>.
func ownerPID(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, tempPrefix)
	if !ok {
		return 0, false
	}
	digits, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(digits)
	return pid, err == nil && pid > 0
}

// running reports whether a process with this id runs (one of another
// user's counts).
func running(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false // Windows: no such process
	}
	defer p.Release()
	if runtime.GOOS == "windows" {
		return true // FindProcess opened it
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}
