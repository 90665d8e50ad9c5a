//go:build linux

// Package fstype names the file system a directory is on: the benchmarks
// report it, since fsync on tmpfs is free and their figures mean nothing
// there.
package fstype

import (
	"fmt"
	"syscall"
)

// Of names the file system dir is on.
func Of(dir string) string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return "unknown (" + err.Error() + ")"
	}
	switch st.Type {
	case 0xEF53:
		return "ext2/3/4"
	case 0x58465342:
		return "xfs"
	case 0x9123683E:
		return "btrfs"
	case 0x01021994:
		return "tmpfs"
	case 0x794C7630:
		return "overlayfs"
	}
	return fmt.Sprintf("type 0x%x", st.Type)
}
