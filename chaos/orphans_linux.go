package main

import (
	"os/exec"
	"syscall"
)

// dieWithSuite has the kernel kill cmd's process when the suite dies, so
// a run killed or cut short (SIGKILL, a closed pipe on its output) leaves
// no service running on a shared machine.
func dieWithSuite(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
