//go:build !linux

package main

import "os/exec"

// dieWithSuite does nothing where the kernel has no parent-death signal:
// a suite killed there leaves its services to be stopped by hand.
func dieWithSuite(*exec.Cmd) {}
