// Package version holds the plugin's version, set at build time with
// -ldflags "-X github.com/kubectl-fleet/kubectl-fleet/pkg/version.Version=v0.1.0".
package version

import "runtime/debug"

// Version is the release version; "dev" when built without ldflags.
var Version = "dev"

// Commit is the git commit the binary was built from, when known.
var Commit = ""

// Get returns the version, falling back to the module version that
// "go install" records.
func Get() string {
	if Version != "dev" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return Version
}
