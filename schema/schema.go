// Package schema holds the fleet file's JSON Schema
// (schema/fleet.schema.json, make schema), for kubectl fleet schema.
package schema

import _ "embed"

// ID is where the schema is published: the file in the repository.
const ID = "https://raw.githubusercontent.com/kubectl-fleet/kubectl-fleet/main/schema/fleet.schema.json"

// JSON is the schema.
//
//go:embed fleet.schema.json
var JSON []byte
