// Package output prints for many clusters at once: line-buffered writers
// that prefix each whole line with its cluster over one synchronised
// writer, output held in the clusters' order (Ordered), a stable colour
// per cluster, plurals and "did you mean" guesses. Objects are encoded by
// package encode, Secrets masked by package object.
package output
