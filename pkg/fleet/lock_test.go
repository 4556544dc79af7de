package fleet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLockRoundTrip(t *testing.T) {
	dir := t.TempDir()
	fleetPath := filepath.Join(dir, "fleet.yaml")
	l, err := LoadLock(fleetPath)
	if err != nil || len(l.Charts) != 0 {
		t.Fatalf("no lock file: %+v, %v", l, err)
	}
	l.Set(LockedChart{App: "web", Chart: "web", Repo: "https://charts.example.com", Version: "~1.2.0", Resolved: "1.2.3", Digest: "sha256:aa"})
	l.Set(LockedChart{App: "cache", Chart: "oci://r.example.com/cache", Version: "2.0.0", Resolved: "2.0.0", Digest: "sha256:bb"})
	l.Set(LockedChart{App: "web", Chart: "web", Repo: "https://charts.example.com", Version: "~1.2.0", Resolved: "1.2.4", Digest: "sha256:cc"})
	if err := l.Write(fleetPath); err != nil {
		t.Fatal(err)
	}
	back, err := LoadLock(fleetPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Charts) != 2 || back.Charts[0].App != "cache" || back.Of("web").Resolved != "1.2.4" || back.Of("nope") != nil {
		t.Errorf("read back: %+v", back.Charts)
	}
	if !back.Of("web").Matches(&Helm{Chart: "web", Repo: "https://charts.example.com", Version: "~1.2.0"}) || back.Of("web").Matches(&Helm{Chart: "web", Repo: "https://charts.example.com", Version: "1.3.0"}) {
		t.Error("Matches")
	}
}

func TestLockErrors(t *testing.T) {
	for _, tt := range []struct{ content, want string }{
		{"kind: Fleet\n", `kind "Fleet", want Lock`},
		{"kind: Lock\ncharts:\n  - {app: web, resolved: 1.0.0, digest: md5:x}\n", "charts[0]: app, resolved and a sha256: digest are required"},
		{"kind: Lock\nchart: []\n", "field chart not found"},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, LockFile), []byte(tt.content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadLock(filepath.Join(dir, "fleet.yaml")); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want %q", tt.content, err, tt.want)
		}
	}
}
