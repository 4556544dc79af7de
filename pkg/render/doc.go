// Package render turns a source — a kustomize folder, a jsonnet file or
// plain manifests — into each cluster's objects, with the cluster's
// attributes injected: as the jsonnet top-level argument and external
// variable "cluster", and by ${var} substitution for kustomize and
// manifests. An Engine renders identical inputs once and clusters in
// parallel, within Limits: bad input (a file that never ends, a YAML alias
// bomb, jsonnet that recurses forever or prints gigabytes) fails with an
// error naming the file, document or field, never a Secret's value.
package render
