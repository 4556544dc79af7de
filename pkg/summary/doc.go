// Package summary is what a command that works on many clusters says at
// its end. A Tally counts, as a rollout's events go by, each cluster's
// objects' actions, its gates and its apps' revisions; a Rollout says
// each cluster's outcome from them, a line each under "Summary:" (Print)
// or a Result each for -o json (Results). With more clusters than fit,
// Lines says identical outcomes once ("36 clusters applied: 40
// unchanged") and names only the clusters that differ.
package summary
