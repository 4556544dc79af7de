package e2e

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestKrewInstall builds the release archive of this platform and its krew
// manifest with `make dist`, validates the manifest with krew's own
// validator (which downloads the archive from a loopback server and installs
// it), installs it offline with krew, and runs it through kubectl.
func TestKrewInstall(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(filepath.Join(repo, "dist")))}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()

	platform := runtime.GOOS + "/" + runtime.GOARCH
	mk := exec.Command("make", "dist", "PLATFORMS="+platform, "DIST_VERSION=v0.1.0", "KREW_URI=http://"+l.Addr().String())
	mk.Dir = repo
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make dist: %v\n%s", err, out)
	}
	manifest := filepath.Join(repo, "dist", "krew", "fleet.yaml")
	archive := filepath.Join(repo, "dist", "kubectl-fleet_"+runtime.GOOS+"_"+runtime.GOARCH+".tar.gz")
	// The archive carries the man pages, generated from the commands, and
	// docs/, where the README's links go.
	if out, err := exec.Command("tar", "-tzf", archive).Output(); err != nil || !strings.Contains(string(out), "man/kubectl-fleet-apply.1") || !strings.Contains(string(out), "docs/fleet-file.md") {
		t.Errorf("the archive has no man pages or docs: %v\n%s", err, out)
	}

	// The validator installs through "kubectl krew": krew as a kubectl plugin.
	krewBin := t.TempDir()
	if err := os.Symlink(filepath.Join(binDir, "krew"), filepath.Join(krewBin, "kubectl-krew")); err != nil {
		t.Fatal(err)
	}
	validate := exec.Command(filepath.Join(binDir, "validate-krew-manifest"), "-manifest", manifest)
	validate.Env = append(append(os.Environ(), ownEnv(t)...), "PATH="+krewBin+string(os.PathListSeparator)+binDir+string(os.PathListSeparator)+os.Getenv("PATH"), "KREW_ROOT="+t.TempDir(), "KREW_NO_UPGRADE_CHECK=1")
	if out, err := validate.CombinedOutput(); err != nil {
		t.Fatalf("validate-krew-manifest: %v\n%s", err, out)
	}

	root := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", filepath.Join(root, "index", "default")).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	krewEnv := append(append(os.Environ(), ownEnv(t)...), "KREW_ROOT="+root, "KREW_NO_UPGRADE_CHECK=1")
	install := exec.Command(filepath.Join(binDir, "krew"), "install", "--manifest="+manifest, "--archive="+archive)
	install.Env = krewEnv
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("krew install: %v\n%s", err, out)
	}
	list := exec.Command(filepath.Join(binDir, "krew"), "list")
	list.Env = krewEnv
	if out, err := list.CombinedOutput(); err != nil || !strings.Contains(string(out), "fleet") {
		t.Errorf("krew list: %v\n%s", err, out)
	}

	// kubectl finds the krew-installed plugin, and only that one.
	run := exec.Command(filepath.Join(binDir, "kubectl"), "fleet", "version")
	run.Env = append(append(os.Environ(), ownEnv(t)...), "PATH="+filepath.Join(root, "bin")+string(os.PathListSeparator)+binDir)
	out, err := run.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "kubectl-fleet v0.1.0 ") {
		t.Errorf("kubectl fleet version: %v\n%s", err, out)
	}
}
