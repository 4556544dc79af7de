// Package output prints for many clusters at once: line-buffered writers
// that prefix each whole line with its cluster over one synchronised
// writer, output held in the clusters' order (Ordered), one Printer of
// a command's lines or JSON events, a stable colour
// per cluster, plurals and "did you mean" guesses. Objects are encoded by
// package encode, Secrets masked by package object.
package output
