// Package docstest holds the tests of the documentation (README.md and
// docs/): every relative link and #anchor resolves, and every example
// marked <!-- check: offline --> prints what it shows when the plugin runs
// it. See docs/README.md, "Checked examples".
package docstest
