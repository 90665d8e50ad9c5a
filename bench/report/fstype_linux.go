//go:build linux

package main

import (
	"fmt"
	"syscall"
)

// fsType names the file system dir is on (the benchmarks' data dirs are
// under TMPDIR; tmpfs makes fsync free).
func fsType(dir string) string {
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
