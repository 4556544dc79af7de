// Package rollout is the engine of one rollout: a rendered fleet goes out
// wave by wave (groups, then their batches), each cluster's apps in
// dependency order, behind the gates that make it safe across runs: what
// a release's gates said on each cluster is recorded on the revision it
// verified, and a later group gets a release only once every cluster of
// the earlier groups runs a verified revision of its current render,
// within the groups' failure budgets (the promotion rule). Both read and
// write the state kept in the clusters (or, for a delivered cluster, in
// its registry), so the next run, a reconcile pass or another machine
// decide the same way.
//
// Read it in the order Engine.Run goes:
//
//   - engine.go: the Engine, its Options, and Run itself: begin, publish
//     the delivered clusters' artifacts, put the brakes before the
//     waves, then run the schedule, one cluster at a time through
//     Engine.cluster.
//   - waves.go: the fleet's waves (groups, batches, tracks, after:).
//   - published_artifacts.go: what a delivered cluster gets, packed,
//     pushed and signed before the first wave.
//   - brakes.go (with pauses.go, approvals.go, promotion.go): what holds
//     a wave before it starts, one ordered list of Brakes (deploy
//     windows, pauses upstream, the promotion rule, approvals, a
//     protected group's confirmation).
//   - schedule.go: the waves run in order, each wave's brakes asked
//     first (runWaves, schedule).
//   - target.go: one cluster's lifecycle, written once over a target:
//     connect, prepare (diffs, a plan's check), its apps (apps.go's
//     appsRun over the target's appOps), its group's checks (checks.go),
//     then end (verdicts.go's settle, the target's --atomic restore)
//     and release, from the wave or after its soak (soak.go).
//   - kubetarget.go, kubeapps.go, restore.go, locks.go: the target of a
//     cluster written to.
//   - published.go, published_apps.go, published_records.go: the target
//     of a cluster delivered through a registry: its tags moved app by
//     app, its Flux read back, its tags moved back.
//   - gates.go, verdicts.go: what each cluster's gates said (Gates), the
//     gates that follow an apply (gatesAfter), and the verdicts written
//     on its revisions (settle).
//   - events.go: what the engine says, as events a Sink receives.
//
// diff.go and delete.go are the same engine's other two verbs.
package rollout
