//go:build !unix

package main

import (
	"os"
	"os/exec"
	"time"
)

func ownGroup(*exec.Cmd) {}

// maxRSS is unknown here: the table shows "-".
func maxRSS(*os.ProcessState) int64 { return 0 }

// selfCPU is unknown here.
func selfCPU() time.Duration { return 0 }
