package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// machine describes where the numbers were taken.
type machine struct {
	CPU, Memory, OS, Go, Load string
	Cores                     int
}

func describeMachine() machine {
	m := machine{CPU: "unknown", Memory: "unknown", OS: runtime.GOOS + "/" + runtime.GOARCH, Go: runtime.Version(), Cores: runtime.NumCPU()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			f := strings.Fields(l)
			if len(f) >= 2 && f[0] == "MemTotal:" {
				if kb, err := strconv.ParseFloat(f[1], 64); err == nil {
					m.Memory = fmt.Sprintf("%.1f GiB", kb/(1<<20))
				}
			}
		}
	}
	if out, err := exec.Command("uname", "-sr").Output(); err == nil {
		m.OS = strings.TrimSpace(string(out)) + " " + runtime.GOARCH
	}
	m.Load = loadAverage()
	return m
}

// loadAverage is /proc/loadavg's three figures, or "" elsewhere.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
