//go:build !linux

package systemtest

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }
