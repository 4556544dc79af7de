// Package fleet reads fleet files: the clusters of a fleet, their ordered
// groups, attributes and optional apps. Decoding is strict and remembers
// the line of every field, so that every problem is reported as
// "fleet.yaml:9: clusters[0].context: message"; Select narrows a fleet to
// the clusters a command works on.
package fleet
