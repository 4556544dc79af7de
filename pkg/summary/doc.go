// Package summary is what a command that works on many clusters says at
// its end. A Tally counts, as a rollout's events go by, each cluster's
// objects' actions, its gates and its apps' revisions.
package summary
