package kube

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gofrs/flock"
)

// deadPID is the id of a process that ran and was reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestRemoveStale(t *testing.T) {
	dead, live := deadPID(t), os.Getppid()
	now := time.Now()
	type folder struct {
		name string
		lock string // "" none, "held" locked by a live owner, "fresh", "old"
	}
	for _, tc := range []struct {
		name   string
		folder folder
		kept   bool
	}{
		{"a killed run's, locked file left", folder{tempPrefix + strconv.Itoa(dead) + "-1", "fresh"}, false},
		{"a killed run's, killed before it locked", folder{tempPrefix + strconv.Itoa(dead) + "-2", ""}, false},
		{"a live run's", folder{tempPrefix + strconv.Itoa(live) + "-3", "held"}, true},
		{"held, whatever its name says", folder{tempPrefix + strconv.Itoa(dead) + "-4", "held"}, true},
		{"a running id, not held, new: being made", folder{tempPrefix + strconv.Itoa(live) + "-5", "fresh"}, true},
		{"a running id, not held, old: the id was taken again", folder{tempPrefix + strconv.Itoa(live) + "-6", "old"}, false},
		{"an earlier version's name, without an id", folder{tempPrefix + "2929511834", ""}, true},
		{"another program's", folder{"kubectl-fleet-oci-" + strconv.Itoa(dead) + "-7", ""}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, tc.folder.name)
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			lockPath := filepath.Join(dir, ownerLock)
			switch tc.folder.lock {
			case "held":
				held := flock.New(lockPath)
				if ok, err := held.TryLock(); err != nil || !ok {
					t.Fatal(ok, err)
				}
				t.Cleanup(func() { _ = held.Close() })
			case "fresh", "old":
				if err := os.WriteFile(lockPath, nil, 0o600); err != nil {
					t.Fatal(err)
				}
				if tc.folder.lock == "old" {
					then := now.Add(-2 * staleAfter)
					if err := os.Chtimes(lockPath, then, then); err != nil {
						t.Fatal(err)
					}
				}
			}
			removeStale(parent, now)
			_, err := os.Stat(dir)
			if kept := err == nil; kept != tc.kept {
				t.Errorf("kept = %v, want %v", kept, tc.kept)
			}
		})
	}
}

// A run's folder is named with its id, locked while it lives, swept by
// no other run meanwhile, and gone with everything in it when removed.
func TestTempFolder(t *testing.T) {
	parent := t.TempDir()
	stale := filepath.Join(parent, tempPrefix+strconv.Itoa(deadPID(t))+"-1")
	if err := os.MkdirAll(stale, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stale, "kubeconfig-1"), []byte("credentials"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := newTempFolder(parent)
	if err != nil {
		t.Fatal(err)
	}
	if pid, ok := ownerPID(filepath.Base(f.path)); !ok || pid != os.Getpid() {
		t.Errorf("folder %s is not named with this process's id %d", f.path, os.Getpid())
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("a killed run's folder was left: %v", err)
	}
	info, err := os.Stat(f.path)
	if err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("folder: %v %v", info, err)
	}
	removeStale(parent, time.Now().Add(time.Hour))
	if _, err := os.Stat(f.path); err != nil {
		t.Fatalf("a live run's folder was removed: %v", err)
	}
	if err := os.WriteFile(filepath.Join(f.path, "kubeconfig-1"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f.remove()
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		names := []string{}
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("left behind: %v", slices.Sorted(slices.Values(names)))
	}
}
