// Package docstest holds the tests of the documentation (README.md and
// docs/): every relative link and #anchor resolves, and every example of a
// command and its output is checked: one marked <!-- check: offline -->
// prints what it shows when the plugin runs it here, one marked
// <!-- check: e2e TestName --> names the test of test/e2e that runs it on
// the test bed (with this package's Steps and Match). See docs/README.md,
// "Checked examples".
package docstest
