package systemtest

import "syscall"

// sysProcAttr makes the kernel kill a node when the process that started it
// dies (a test binary killed by go test's timeout runs no Cleanup).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
