// Package output prints for many clusters at once: line-buffered writers
// that prefix each whole line with its cluster over one synchronised
// writer, a stable colour per cluster, and Secret masking.
package output
