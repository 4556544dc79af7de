// Package schema holds the fleet file's JSON Schema
// (schema/fleet.schema.json, make schema), for kubectl fleet schema.
package schema

import _ "embed"

// JSON is the schema.
//
//go:embed fleet.schema.json
var JSON []byte
