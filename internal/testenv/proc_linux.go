package testenv

import "syscall"

// workerProcAttr puts a worker in a process group of its own (killed whole
// at Cleanup) and makes the kernel kill it when the test binary dies (one
// killed by go test's timeout runs no Cleanup).
func workerProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
