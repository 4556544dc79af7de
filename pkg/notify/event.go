package notify

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Type is what happened to a release: the name a fleet file's sink
// lists in its events, and, under TypePrefix, the CloudEvents type.
type Type string

// The events of a release, in the order a release meets them.
const (
	// ReleaseStarted: a rollout of a release began (its first wave is
	// about to be asked whether it may start).
	ReleaseStarted Type = "release.started"
	// WaveStarted: a wave's brakes let it go; its clusters start.
	WaveStarted Type = "wave.started"
	// WaveHeld: a wave did not start, and why (Held).
	WaveHeld Type = "wave.held"
	// ApprovalRequired: a wave waits for an approval (Held, with the
	// command that gives it); sent besides its WaveHeld.
	ApprovalRequired Type = "approval.required"
	// ClusterFailed: a cluster of a wave failed (Failure).
	ClusterFailed Type = "cluster.failed"
	// WaveFinished: a wave's clusters are all done (Counts).
	WaveFinished Type = "wave.finished"
	// Rollback: an automatic rollback began, and again when it ended
	// (Rollback, its Outcome then set).
	Rollback Type = "rollback"
	// ReleaseFinished: the rollout ended (Outcome, Counts).
	ReleaseFinished Type = "release.finished"
)

// Test is the event `vet --server --notify-test` sends each sink: not a
// release's, never asked for in a fleet file.
const Test Type = "test"

// Types are every event's type, in the order a release meets them.
var Types = []Type{ReleaseStarted, WaveStarted, WaveHeld, ApprovalRequired, ClusterFailed, WaveFinished, Rollback, ReleaseFinished}

// TypePrefix goes before a Type to make its CloudEvents type
// ("io.kubectl-fleet.release.started.v1" with Version).
const TypePrefix = "io.kubectl-fleet."

// Version is the version of the events' schema, the CloudEvents type's
// suffix: a change that removes or renames a field is a new version.
const Version = "v1"

// CloudEventsType is t's CloudEvents type: "io.kubectl-fleet.wave.held.v1".
func (t Type) CloudEventsType() string { return TypePrefix + string(t) + "." + Version }

// ParseType is the Type named s, or an error that lists those there are.
func ParseType(s string) (Type, error) {
	if t := Type(s); slices.Contains(Types, t) {
		return t, nil
	}
	names := make([]string, len(Types))
	for i, t := range Types {
		names[i] = string(t)
	}
	return "", fmt.Errorf("unknown event %q (one of %s)", s, strings.Join(names, ", "))
}

// Event is one thing that happened to a release: every sink reads the
// same. Its JSON is the CloudEvents data of the event (docs/events.md).
type Event struct {
	Type Type      `json:"type"`
	Time time.Time `json:"time"`
	// Seq numbers the release's events from 1, in the order they
	// happened: with Release.ID, what tells a retry from a new event.
	Seq int `json:"seq"`
	// Fleet is the fleet's name (metadata.name).
	Fleet   string  `json:"fleet"`
	Release Release `json:"release"`
	// Wave is the wave's name (its group, or "group/batch"), and Group
	// its group; empty for the events of the whole release.
	Wave  string `json:"wave,omitempty"`
	Group string `json:"group,omitempty"`
	// Clusters are the clusters the event is about: a wave's, the failed
	// cluster, those rolled back.
	Clusters []string `json:"clusters,omitempty"`
	// Counts are the release's clusters by state so far (a wave's in
	// its own events).
	Counts Counts `json:"counts"`
	// States are a finished wave's clusters' states (WaveFinished):
	// succeeded, failed, skipped or not started.
	States map[string]string `json:"states,omitempty"`
	// Held says why a wave did not start (WaveHeld, ApprovalRequired).
	Held *Held `json:"held,omitempty"`
	// Failure is a cluster's failure (ClusterFailed).
	Failure *Failure `json:"failure,omitempty"`
	// Rollback is a rollback's (Rollback).
	Rollback *RollbackInfo `json:"rollback,omitempty"`
	// Outcome is how the release ended (ReleaseFinished): succeeded,
	// failed, held, interrupted or not started.
	Outcome string `json:"outcome,omitempty"`
	// Waves are every wave of the release with its counts so far: what a
	// message updated in place shows as its table.
	Waves []WaveState `json:"waves,omitempty"`
	// TraceID is the release's trace, when one is recorded.
	TraceID string `json:"traceID,omitempty"`
}

// Release names what is rolled out.
type Release struct {
	// ID is the run's: the same in every event of one rollout.
	ID string `json:"id"`
	// Verb is the command: apply, rollback, reconcile.
	Verb string `json:"verb"`
	// Commit is the git commit the sources were rendered from, when
	// they are in a work tree; Dirty says it has changes not committed.
	Commit string `json:"commit,omitempty"`
	Dirty  bool   `json:"dirty,omitempty"`
	// Repository is the commit's repository ("owner/name" on GitHub),
	// when known (GITHUB_REPOSITORY).
	Repository string `json:"repository,omitempty"`
}

// Counts are clusters by state.
type Counts struct {
	Total      int `json:"total"`
	Succeeded  int `json:"succeeded"`
	Failed     int `json:"failed"`
	Skipped    int `json:"skipped,omitempty"`
	NotStarted int `json:"notStarted"`
}

// Held is why a wave did not start.
type Held struct {
	// Brake is what held it: approval, windows, pause or promotion.
	Brake   string   `json:"brake"`
	Reasons []string `json:"reasons"`
	// Command, when set, is what lets it go ("kubectl fleet approve -g
	// production", "kubectl fleet resume …").
	Command string `json:"command,omitempty"`
}

// Failure is a cluster's failure.
type Failure struct {
	Cluster string `json:"cluster"`
	// Gate is what failed: apply, health, tests, check NAME, soak,
	// analysis, flux, or the run's stage.
	Gate    string `json:"gate"`
	Message string `json:"message"`
}

// RollbackInfo is a rollback: when it begins, and again when it ended
// (Outcome).
type RollbackInfo struct {
	Automatic bool     `json:"automatic"`
	Why       string   `json:"why,omitempty"`
	Clusters  []string `json:"clusters"`
	// Outcome, once it ended: succeeded (every cluster rolled back) or
	// failed (it did not finish: the command says which clusters are
	// where).
	Outcome string `json:"outcome,omitempty"`
}

// WaveState is a wave and its clusters' states so far.
type WaveState struct {
	Name  string `json:"name"`
	Group string `json:"group"`
	// State is pending, running, held, finished or failed.
	State  string `json:"state"`
	Counts Counts `json:"counts"`
	// Held is why it waits (State held).
	Held *Held `json:"held,omitempty"`
}
