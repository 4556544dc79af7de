//go:build !linux

package lock

// machine is "" where it cannot be told for certain that two processes
// see the same processes: a dead holder is then taken over only once its
// lease went unrenewed past its renewal interval.
func machine() string { return "" }
