// Package render turns a source — a kustomize folder, a jsonnet file or
// plain manifests — into each cluster's objects, with the cluster's
// attributes injected: as the jsonnet top-level argument and external
// variable "cluster", and by ${var} substitution for kustomize and
// manifests. An Engine renders identical inputs once and clusters in
// parallel.
package render
