package main

import (
	"runtime/debug"
	"testing"
)

// TestLimitMemory: the plugin's soft memory limit, unless GOMEMLIMIT
// set one.
func TestLimitMemory(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(before)
	if got := limitMemory(func(string) string { return "" }); got != MemoryLimit || debug.SetMemoryLimit(-1) != MemoryLimit {
		t.Errorf("without GOMEMLIMIT: limit %d, runtime's %d; want %d", got, debug.SetMemoryLimit(-1), MemoryLimit)
	}
	debug.SetMemoryLimit(2 << 30) // as the runtime would have read GOMEMLIMIT=2GiB
	if got := limitMemory(func(k string) string {
		if k == "GOMEMLIMIT" {
			return "2GiB"
		}
		return ""
	}); got != 2<<30 || debug.SetMemoryLimit(-1) != 2<<30 {
		t.Errorf("with GOMEMLIMIT=2GiB: limit %d, runtime's %d", got, debug.SetMemoryLimit(-1))
	}
}
