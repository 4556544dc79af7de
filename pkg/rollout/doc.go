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
//     the delivered clusters' artifacts, put the holds before the waves,
//     then run the schedule, one cluster at a time through Engine.cluster.
//   - waves.go: the fleet's waves (groups, batches, tracks, after:).
//   - published_artifacts.go: what a delivered cluster gets, packed,
//     pushed and signed before the first wave.
//   - holds.go, pauses.go, approvals.go: what holds a wave before it
//     starts (confirmations of protected groups, deploy windows, pauses
//     upstream, approvals).
//   - promotion.go: the promotion rule, read when a wave would start.
//   - schedule.go: the waves run in order, each wave's gate asked first
//     (Run, Schedule).
//   - cluster.go: one cluster written to: connect, diff, its apps, its
//     group's checks, its verdicts, --atomic's restore (restore.go).
//   - apps.go: a cluster's apps in dependency order over appOps
//     (appsRun); kubeapps.go: appOps on a cluster written to, with
//     locks (locks.go).
//   - published.go, published_apps.go, published_records.go: one
//     delivered cluster: its tags moved app by app, its Flux read back.
//   - gates.go, verdicts.go: what each cluster's gates said (Gates), and
//     the verdicts written on its revisions (settle); checks.go and
//     soak.go: the group's checks and soak.
//   - events.go: what the engine says, as events a Sink receives.
//
// diff.go and delete.go are the same engine's other two verbs.
package rollout
