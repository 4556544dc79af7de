// Package notify tells people where they look what a release does: one
// vocabulary of events (a release started, a wave started, was held or
// finished, a cluster failed, an approval is required, a rollback began,
// the release finished), derived from the rollout engine's events
// (Recorder), and sent to the fleet file's sinks (webhooks with
// CloudEvents, Slack, Teams, GitHub) by a Notifier that never holds the
// rollout: each sink has its own goroutine, a bounded time per attempt,
// retries with backoff, and one warning for what it could not send.
package notify
