// Package schemagen generates the JSON Schema of the fleet file from its Go
// types (fleet.Fleet), their yaml names and their doc comments, with
// invopop/jsonschema. Editors use it (the yaml-language-server line
// kubectl fleet init writes) to complete fields and flag typos; the
// plugin itself reads fleet files with its own stricter checks.
package schemagen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	invopop "github.com/invopop/jsonschema"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/schema"
)

// Generate returns the schema as indented JSON. It runs in the module's
// folder: the comments are read from the Go sources there.
func Generate() ([]byte, error) {
	r := &invopop.Reflector{
		FieldNameTag: "yaml",
		// Required is what the tags say: validate.go holds the rest
		// (one source of four, paths that exist).
		RequiredFromJSONSchemaTags: true,
		Mapper:                     mapType,
	}
	for _, pkg := range []string{"./pkg/fleet", "./pkg/object"} {
		if err := r.AddGoComments("github.com/kubectl-fleet/kubectl-fleet", pkg, invopop.WithFullComment()); err != nil {
			return nil, fmt.Errorf("reading the comments of %s: %w", pkg, err)
		}
	}
	s := r.Reflect(&fleet.Fleet{})
	s.ID = schema.ID
	s.Title = "kubectl fleet: fleet file (fleet/v1alpha1)"
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Validate checks a fleet file (YAML) against a schema (JSON): what an
// editor with the yaml-language-server line says of it.
func Validate(schemaJSON, fleetYAML []byte) error {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(schema.ID, doc); err != nil {
		return err
	}
	s, err := c.Compile(schema.ID)
	if err != nil {
		return err
	}
	j, err := yaml.YAMLToJSON(fleetYAML)
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		return err
	}
	return s.Validate(v)
}

// mapType is the schema of the types the fleet file writes in a form of
// its own: a duration is a string in Go's syntax (90s, 10m, 1h30m), an
// amount of clusters a number or a percentage ("10%"), and a batch may
// be its size alone.
func mapType(t reflect.Type) *invopop.Schema {
	switch t {
	case reflect.TypeOf(time.Duration(0)):
		return &invopop.Schema{Type: "string", Pattern: `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`, Description: "a duration such as 90s, 10m or 1h30m"}
	case reflect.TypeOf(fleet.Amount{}):
		return amount()
	case reflect.TypeOf(fleet.Batch{}):
		size := amount()
		batch := &invopop.Schema{Type: "object", AdditionalProperties: invopop.FalseSchema, Properties: invopop.NewProperties(), Description: "a batch: the group's clusters of a label selector, or the first ones up to a size counted from the group's first cluster"}
		batch.Properties.Set("name", &invopop.Schema{Type: "string", Description: "the batch's name in output (default its number)"})
		batch.Properties.Set("selector", &invopop.Schema{Type: "string", Description: "a label selector over cluster labels, e.g. canary=true"})
		batch.Properties.Set("size", amount())
		batch.Properties.Set("optional", &invopop.Schema{Type: "boolean", Description: "a selector batch may match none of the group's clusters (otherwise an error: a typo would drop the canary)"})
		return &invopop.Schema{OneOf: []*invopop.Schema{batch, size}}
	case reflect.TypeOf(fleet.Approval{}):
		long := &invopop.Schema{Type: "object", AdditionalProperties: invopop.FalseSchema, Properties: invopop.NewProperties()}
		long.Properties.Set("required", &invopop.Schema{Type: "boolean", Description: "hold the group until each cluster's release is approved"})
		long.Properties.Set("expires", mapType(reflect.TypeOf(time.Duration(0))))
		return &invopop.Schema{OneOf: []*invopop.Schema{{Type: "string", Enum: []any{"required", "none"}}, long},
			Description: "required: hold the group until each cluster's release is approved (kubectl fleet approve); {required: true, expires: 72h}: and an approval counts that long"}
	}
	return nil
}

// amount is the schema of a number of clusters or a percentage.
func amount() *invopop.Schema {
	return &invopop.Schema{OneOf: []*invopop.Schema{
		{Type: "integer", Minimum: "0"},
		{Type: "string", Pattern: `^[0-9]+%$`},
	}, Description: "a number of clusters, or a percentage of the group's (10%)"}
}
