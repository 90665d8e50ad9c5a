//go:build !linux

package testenv

import "syscall"

// workerProcAttr puts a worker in a process group of its own.
func workerProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
