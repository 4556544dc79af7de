// Command krew renders the krew plugin manifest (.krew.yaml) for a release:
// the version, where the archives are served from, and each archive's
// sha256 from dist/checksums.txt. Platforms whose archive was not built are
// left out, so a partial `make dist PLATFORMS=...` still gives a valid
// manifest for what it built.
//
//	go run ./hack/krew -template .krew.yaml -checksums dist/checksums.txt \
//	    -version v0.1.0 -uri https://example.com/releases/v0.1.0 -out dist/krew/fleet.yaml
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

var archiveName = regexp.MustCompile(`^kubectl-fleet_([a-z0-9]+)_([a-z0-9]+)\.(tar\.gz|zip)$`)

func main() {
	template := flag.String("template", ".krew.yaml", "the manifest template")
	checksums := flag.String("checksums", "dist/checksums.txt", "sha256sum output for the archives")
	version := flag.String("version", "", "the release version, vMAJOR.MINOR.PATCH")
	uri := flag.String("uri", "", "where the archives are served from")
	out := flag.String("out", "dist/krew/fleet.yaml", "the manifest to write")
	flag.Parse()
	if err := run(*template, *checksums, *version, *uri, *out); err != nil {
		fmt.Fprintln(os.Stderr, "krew manifest:", err)
		os.Exit(1)
	}
}

func run(template, checksums, version, uri, out string) error {
	vars := map[string]string{"VERSION": version, "KREW_URI": strings.TrimSuffix(uri, "/")}
	f, err := os.Open(checksums)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 2 {
			continue
		}
		if m := archiveName.FindStringSubmatch(fields[1]); m != nil {
			vars["SHA256_"+m[1]+"_"+m[2]] = fields[0]
		}
	}
	text, err := os.ReadFile(template)
	if err != nil {
		return err
	}
	expanded := os.Expand(string(text), func(k string) string { return vars[k] })
	var manifest map[string]any
	if err := yaml.Unmarshal([]byte(expanded), &manifest); err != nil {
		return err
	}
	spec, _ := manifest["spec"].(map[string]any)
	platforms, _ := spec["platforms"].([]any)
	var kept []any
	for _, p := range platforms {
		if m, ok := p.(map[string]any); ok && m["sha256"] != "" && m["sha256"] != nil {
			kept = append(kept, p)
		}
	}
	if len(kept) == 0 {
		return fmt.Errorf("no archive of %s is in %s", template, checksums)
	}
	spec["platforms"] = kept
	b, err := yaml.Marshal(manifest)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "krew manifest: %s, %d platforms\n", out, len(kept))
	return os.WriteFile(out, b, 0o644)
}
