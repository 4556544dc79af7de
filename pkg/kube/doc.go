// Package kube connects to the clusters of a fleet: one ConfigFlags, REST
// mapper and discovery cache per cluster (never one repointed in a loop),
// kubeconfig checks that need no request, identity probes and pins,
// server-side apply of one object, and attributes read from live objects.
package kube
