package lock

import (
	"os"
	"strings"
)

// machine names this kernel's boot and this process's pid namespace
// (Linux): two processes with the same machine see the same processes,
// so one of them knows for certain whether the other still runs.
func machine() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(boot)) + " " + ns
}
