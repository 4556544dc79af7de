package schemagen_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/internal/schemagen"
)

const file = "schema/fleet.schema.json"

// validate checks a fleet file's YAML against the schema as committed.
func validate(t *testing.T, data []byte) error {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return schemagen.Validate(b, data)
}

// TestSchemaIsGenerated: the schema committed is the one the Go types
// give (make schema writes it).
func TestSchemaIsGenerated(t *testing.T) {
	t.Chdir("../..")
	want, err := schemagen.Generate()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not what the fleet types give: run make schema", file)
	}
}

// TestSchemaValidatesEveryFleetFile: every fleet file in the repository
// passes the schema, but the one that is broken on purpose: the schema
// and the plugin agree on what a fleet file's fields are.
func TestSchemaValidatesEveryFleetFile(t *testing.T) {
	t.Chdir("../..")
	broken := map[string]string{"docs/examples/broken/fleet.yaml": "contxet"}
	n := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != ".") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil || !bytes.Contains(b, []byte("\nkind: Fleet\n")) {
			return err
		}
		n++
		verr := validate(t, b)
		switch want, ok := broken[path]; {
		case ok && (verr == nil || !strings.Contains(verr.Error(), want)):
			t.Errorf("%s: want an error about %q, got %v", path, want, verr)
		case !ok && verr != nil:
			t.Errorf("%s: %v", path, verr)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 8 {
		t.Errorf("%d fleet files found, want every one of the repository's (8 or more)", n)
	}
}

// TestSchemaRejectsTypos: what an editor flags as the user types.
func TestSchemaRejectsTypos(t *testing.T) {
	t.Chdir("../..")
	example, err := os.ReadFile("examples/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, from, to, want string }{
		{"a cluster field", "context: fleet-c2", "contxet: fleet-c2", "contxet"},
		{"a helm field", "    kustomize: apps/web/overlays\n", "    helm: {chart: c, valuesInLine: {a: 1}}\n", "valuesInLine"},
		{"a duration", "soak: 20s", "soak: 20", "soak"},
		{"a percentage", "soak: 20s", "soak: 20s\n    maxFailures: 5 %", "maxFailures"},
		{"a batch field", "soak: 20s", "soak: 20s\n    batches: [{selector: canary=true}, 10%, {sise: 1}]", "batches"},
		{"the apiVersion", "apiVersion: fleet/v1alpha1", "apiVersion: fleet/v1", "apiVersion"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bad := strings.Replace(string(example), tt.from, tt.to, 1)
			if bad == string(example) {
				t.Fatalf("%q is not in the example", tt.from)
			}
			if err := validate(t, []byte(bad)); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("want an error naming %q, got %v", tt.want, err)
			}
		})
	}
}
