// Package reconcile is what a pass of "kubectl fleet reconcile" decides
// and says, over the rollout engine (pkg/rollout).
//
// A Pass (run.go) renders (pkg/rendered), then RefuseProtected refuses a selection
// that includes a protected group without --yes (reconcile never asks),
// Owned keeps this replica's shard of the clusters, and Decide checks each
// of them (rollout.Check, over the Clients it is given), says what it found
// and what the pass does about it as ClusterEvents, and returns the
// Decisions: the clusters to apply, and the apps to apply with force
// (--correct-drift). The clusters applied go through apply's rollout;
// Applied counts their outcome in the Metrics. The loop's own lines are
// LoopEvents and a PassEvent at the end of each pass, said by a Log; with
// --log-format json, every line the command writes goes through a JSONLog.
// A Service runs pass after pass (Loop: the interval, the signals), with
// the server of its metrics and health beside them (--metrics-addr).
//
// The package never sees cobra or the command's flags: pkg/cmd gives a
// Pass plain values (Config, apply's rollout.Options), its clients, its
// metrics, and apply's render and rollout as functions.
package reconcile
